package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
)

// schedulerClient is the flag every command talking to the scheduler takes.
type schedulerClient struct {
	SchedulerURL string `name:"scheduler-url" help:"URL of a running gpupool scheduler." default:"http://127.0.0.1:9470" env:"GPUPOOL_SCHEDULER_URL"`
	Format       string `short:"f" help:"Output: table or json." enum:"table,json" default:"table"`

	out io.Writer // stdout unless a test sets it
}

func (s *schedulerClient) client() (*api.Client, error) {
	return api.NewClient(s.SchedulerURL, nil)
}

func (s *schedulerClient) writer() io.Writer {
	if s.out != nil {
		return s.out
	}
	return os.Stdout
}

// print writes v as JSON, or calls table.
func (s *schedulerClient) print(v any, table func(w *tabwriter.Writer)) error {
	w := s.writer()
	if s.Format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// SubmitCmd submits a job.
type SubmitCmd struct {
	schedulerClient
	Queue          string            `short:"q" required:"" help:"Queue to submit to (see gpupool queue ls)."`
	Team           string            `required:"" help:"Team the job is billed to."`
	Project        string            `help:"Project the job is billed to."`
	Name           string            `help:"A name for people."`
	GPUs           int               `name:"gpus" default:"1" help:"GPUs, all of one card type in one cluster."`
	Card           string            `help:"Card type, e.g. H100-80GB (default: any card with --min-memory-gib)."`
	MinMemoryGiB   int               `name:"min-memory-gib" help:"With no --card: any card with at least this much memory."`
	Cluster        string            `help:"Pin the job to one cluster."`
	Priority       string            `help:"Priority class (default: the queue's)."`
	NotPreemptible bool              `name:"not-preemptible" help:"Never stop the job to reclaim GPUs or for higher priority."`
	Checkpointable bool              `help:"The job checkpoints: give it its pool's grace before stopping it."`
	Workload       string            `help:"training, inference, batch-inference, dev or other."`
	ModelName      string            `name:"model-name" help:"The AI model the job trains or serves."`
	TimeLimit      time.Duration     `name:"time-limit" help:"Run time asked for (default: the pool's maximum)."`
	Label          map[string]string `help:"Labels, key=value (repeatable), e.g. gpupool.io/no-reclaim=true."`
}

// Run submits the job and prints its ID.
func (s *SubmitCmd) Run(ctx context.Context) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	spec := scheduler.JobSpec{
		Name: s.Name, Team: s.Team, Project: s.Project, Queue: s.Queue, GPUs: s.GPUs, Card: s.Card, MinMemoryGiB: s.MinMemoryGiB,
		Cluster: s.Cluster, PriorityClass: s.Priority, Checkpointable: s.Checkpointable, Workload: s.Workload,
		ModelName: s.ModelName, TimeLimitS: int64(s.TimeLimit / time.Second), Labels: s.Label,
	}
	if s.NotPreemptible {
		f := false
		spec.Preemptible = &f
	}
	j, err := c.Submit(ctx, spec)
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	if s.Format == "json" {
		return s.print(j, nil)
	}
	_, err = fmt.Fprintf(s.writer(), "submitted %s to queue %s (pool %s, priority %d); follow it with: gpupool jobs ls --queue %s\n",
		j.ID, j.Spec.Queue, j.Pool, j.Priority, j.Spec.Queue)
	return err
}

// QueueCmd groups the queue commands.
type QueueCmd struct {
	Ls QueueLsCmd `cmd:"" name:"ls" help:"List queues with their quota and use per card type."`
}

// QueueLsCmd lists queues.
type QueueLsCmd struct{ schedulerClient }

// Run prints the queues.
func (q *QueueLsCmd) Run(ctx context.Context) error {
	c, err := q.client()
	if err != nil {
		return err
	}
	qs, err := c.Queues(ctx)
	if err != nil {
		return fmt.Errorf("queue ls: %w", err)
	}
	return q.print(qs, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "QUEUE\tPOOL\tTEAM\tCOHORT\tWEIGHT\tPENDING\tRUNNING\tRECLAIMING\tCARD\tUSED/NOMINAL\tBORROWED\tBORROW LIMIT")
		for _, s := range qs {
			if len(s.Cards) == 0 {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%g\t%d\t%d\t%d\t-\t-\t-\t-\n", s.Name, s.Pool, dash(s.Team), dash(s.Cohort), s.Weight, s.Pending, s.Running, s.Reclaiming)
			}
			for i, u := range s.Cards {
				limit := "none"
				if u.BorrowingLimit != nil {
					limit = fmt.Sprint(*u.BorrowingLimit)
				}
				if i == 0 {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%g\t%d\t%d\t%d\t", s.Name, s.Pool, dash(s.Team), dash(s.Cohort), s.Weight, s.Pending, s.Running, s.Reclaiming)
				} else {
					fmt.Fprint(w, "\t\t\t\t\t\t\t\t")
				}
				fmt.Fprintf(w, "%s\t%d/%d\t%d\t%s\n", u.Card, u.Used, u.Nominal, u.Borrowed, limit)
			}
		}
	})
}

// JobsCmd groups the job commands.
type JobsCmd struct {
	Ls JobsLsCmd `cmd:"" name:"ls" help:"List jobs: running, then queued in the order they will be considered, then recently finished."`
}

// JobsLsCmd lists jobs.
type JobsLsCmd struct {
	schedulerClient
	Queue string `short:"q" help:"Only this queue."`
	Team  string `help:"Only this team."`
	State string `help:"Only jobs in this state: queued, admitted, reclaiming, finished." enum:",queued,admitted,reclaiming,finished" default:""`
	Limit int    `help:"At most this many." default:"100"`
}

// Run prints the jobs.
func (j *JobsLsCmd) Run(ctx context.Context) error {
	c, err := j.client()
	if err != nil {
		return err
	}
	jobs, err := c.Jobs(ctx, scheduler.JobFilter{Queue: j.Queue, Team: j.Team, State: scheduler.JobState(j.State), Limit: j.Limit})
	if err != nil {
		return fmt.Errorf("jobs ls: %w", err)
	}
	return j.print(jobs, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "JOB\tQUEUE\tTEAM\tSTATE\tATTEMPT\tGPUS\tCARD\tCLUSTER\tPRIORITY\tQUEUE WAIT\tWHY")
		for _, x := range jobs {
			card := x.Card
			if card == "" {
				card = x.Spec.Card
				if card == "" {
					card = fmt.Sprintf("≥%d GiB", x.Spec.MinMemoryGiB)
				}
			}
			why := x.WaitReason
			if x.State == scheduler.StateReclaiming {
				why = x.ReclaimReason
			}
			if x.State == scheduler.StateFinished {
				why = x.Status
			}
			wait := time.Duration(x.QueueWaitS * float64(time.Second)).Round(time.Second)
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%d\t%s\t%s\n", x.AttemptKey(), x.Spec.Queue, x.Spec.Team, x.State, x.Attempt,
				x.Spec.GPUs, card, dash(x.Cluster), x.Priority, wait, why)
		}
	})
}

// ActionsCmd groups the audit commands.
type ActionsCmd struct {
	Ls ActionsLsCmd `cmd:"" name:"ls" help:"List the scheduler's decisions, newest last."`
}

// ActionsLsCmd lists audit rows.
type ActionsLsCmd struct {
	schedulerClient
	Job      string        `help:"Only this job (all its attempts)."`
	Decision string        `help:"Only this decision: admit, borrow, reclaim, preempt, requeue, stop, expire, notify, kill, cancel, recommend, skip, reject."`
	Pool     string        `help:"Only this pool."`
	Since    time.Duration `help:"Only the last this long, e.g. 24h (default: all)."`
	Limit    int           `help:"At most this many, the newest." default:"50"`
}

// Run prints the rows.
func (a *ActionsLsCmd) Run(ctx context.Context) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	f := scheduler.ActionFilter{Job: a.Job, Decision: a.Decision, Pool: a.Pool, Limit: a.Limit}
	if a.Since > 0 {
		f.Since = time.Now().Add(-a.Since)
	}
	rows, err := c.Actions(ctx, f)
	if err != nil {
		return fmt.Errorf("actions ls: %w", err)
	}
	return a.print(rows, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "TIME\tDECISION\tOUTCOME\tJOB\tPOOL\tPOLICY\tEXECUTOR\tREASON")
		for _, r := range rows {
			policy := r.Policy
			if policy != "" {
				policy += fmt.Sprintf("[%d]", r.Step)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.UTC().Format("2006-01-02 15:04:05"), r.Decision, r.Outcome,
				dash(r.Job), dash(r.Pool), dash(policy), dash(r.Executor), strings.ReplaceAll(r.Reason, "\n", " "))
		}
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
