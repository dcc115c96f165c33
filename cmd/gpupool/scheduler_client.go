package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
)

// schedulerClient is the flags every command talking to the scheduler takes.
type schedulerClient struct {
	SchedulerURL string `name:"scheduler-url" help:"URL of a running gpupool scheduler." default:"http://127.0.0.1:9470" env:"GPUPOOL_SCHEDULER_URL"`
	Format       string `short:"f" help:"Output: table or json." enum:"table,json" default:"table"`
	TokenFile    string `name:"token-file" help:"File holding the API token (default: GPUPOOL_TOKEN, else the admin token in <data_dir>/auth/admin.token)." env:"GPUPOOL_TOKEN_FILE"`
	Token        string `hidden:"" env:"GPUPOOL_TOKEN" help:"The API token (set GPUPOOL_TOKEN: a flag's value shows in ps)."`
	CAFile       string `name:"ca-file" help:"CA certificate to trust for an https:// scheduler URL." env:"GPUPOOL_CA_FILE"`
	ClientCert   string `name:"client-cert" help:"Client certificate to present (with --client-key)."`
	ClientKey    string `name:"client-key" help:"Key of --client-cert."`
	Insecure     bool   `name:"insecure" help:"Send the token over plain http:// to a scheduler not on this machine (a TLS-terminating proxy on the way). The data directory's admin token never leaves this machine."`

	out io.Writer // stdout unless a test sets it
}

func (s *schedulerClient) client(g *Globals) (*api.Client, error) {
	c, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	c.Resolve()
	return api.Dial(s.SchedulerURL, api.Credentials{TokenFile: s.TokenFile, Token: s.Token, DefaultTokenFile: c.Auth.AdminTokenFile,
		CAFile: s.CAFile, CertFile: s.ClientCert, KeyFile: s.ClientKey, Insecure: s.Insecure})
}

// call asks the scheduler with ask and prints its answer, as JSON or as table
// writes it; what names the command in an error.
func call[T any](s *schedulerClient, g *Globals, what string, ask func(*api.Client) (T, error), table func(io.Writer, T) error) error {
	c, err := s.client(g)
	if err != nil {
		return err
	}
	v, err := ask(c)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return s.print(v, func(w io.Writer) error { return table(w, v) })
}

// print writes v as JSON, or as table writes it.
func (s *schedulerClient) print(v any, table func(w io.Writer) error) error {
	return api.Print(stdout(s.out), s.Format == "json", v, table)
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
	MIGProfile     string            `name:"mig-profile" help:"MIG instances of this profile, e.g. 1g.10gb: --gpus is then the number of instances."`
	Cluster        string            `help:"Pin the job to one cluster."`
	Clusters       []string          `sep:"," help:"Or the clusters it may run in, comma-separated (any: every one): it goes where it starts soonest."`
	Locality       map[string]string `help:"Data locality, key=value (repeatable), e.g. region=eu: only clusters labelled so."`
	Priority       string            `help:"Priority class (default: the queue's)."`
	NotPreemptible bool              `name:"not-preemptible" help:"Never stop the job to reclaim GPUs or for higher priority."`
	Checkpointable bool              `help:"The job checkpoints: give it its pool's grace before stopping it."`
	Workload       string            `help:"training, inference, batch-inference, dev or other."`
	ModelName      string            `name:"model-name" help:"The AI model the job trains or serves."`
	TimeLimit      time.Duration     `name:"time-limit" help:"Run time asked for (default: the pool's maximum)."`
	NotBefore      time.Time         `name:"not-before" help:"Hold the job until then (RFC 3339, e.g. 2026-12-24T22:00:00+01:00)."`
	Window         string            `help:"Start it only in this daily window, HH:MM-HH:MM (off-peak: 22:00-07:00)."`
	TimeZone       string            `name:"timezone" help:"Time zone of --window (IANA, e.g. Europe/Berlin; default UTC)."`
	Label          map[string]string `help:"Labels, key=value (repeatable), e.g. gpupool.io/no-reclaim=true."`
	IdempotencyKey string            `name:"idempotency-key" help:"Key that makes a retried submit queue its job once (default: a random one, reused across this command's own retries; pass your own to retry across runs)."`
	Retries        int               `default:"3" help:"Retries when the scheduler is unreachable or fails (the same idempotency key each time)."`
}

// Run submits the job and prints its ID.
func (s *SubmitCmd) Run(g *Globals, ctx context.Context) error {
	c, err := s.client(g)
	if err != nil {
		return err
	}
	spec := scheduler.JobSpec{
		Name: s.Name, Team: s.Team, Project: s.Project, Queue: s.Queue, GPUs: s.GPUs, Card: s.Card, MinMemoryGiB: s.MinMemoryGiB, MIGProfile: s.MIGProfile,
		Cluster: s.Cluster, Clusters: s.Clusters, Locality: s.Locality, PriorityClass: s.Priority, Checkpointable: s.Checkpointable, Workload: s.Workload,
		ModelName: s.ModelName, TimeLimitS: int64(s.TimeLimit / time.Second), Labels: s.Label, Window: s.Window, TimeZone: s.TimeZone,
	}
	if s.NotPreemptible {
		spec.Preemptible = new(bool) // false
	}
	if !s.NotBefore.IsZero() {
		spec.NotBefore = &s.NotBefore
	}
	j, err := c.SubmitRetrying(ctx, spec, s.IdempotencyKey, s.Retries)
	if err != nil {
		return err
	}
	if s.Format == "json" {
		return s.print(j, nil)
	}
	return api.WriteSubmitted(stdout(s.out), j)
}

// QueueCmd groups the queue commands.
type QueueCmd struct {
	Ls QueueLsCmd `cmd:"" name:"ls" help:"List queues with their quota and use per card type."`
}

// QueueLsCmd lists queues.
type QueueLsCmd struct{ schedulerClient }

// Run prints the queues.
func (q *QueueLsCmd) Run(g *Globals, ctx context.Context) error {
	return call(&q.schedulerClient, g, "queue ls", func(c *api.Client) ([]scheduler.QueueStatus, error) { return c.Queues(ctx) }, api.WriteQueues)
}

// JobsCmd groups the job commands.
type JobsCmd struct {
	Ls     JobsLsCmd     `cmd:"" name:"ls" help:"List jobs: running, then queued in the order they will be considered, then recently finished."`
	Resume JobsResumeCmd `cmd:"" help:"Let a dev job held since a policy reclaimed it be admitted again."`
}

// JobsResumeCmd resumes a held job.
type JobsResumeCmd struct {
	schedulerClient
	ID string `arg:"" help:"Job ID (sched/<team>/<n>)."`
}

// Run resumes the job.
func (j *JobsResumeCmd) Run(g *Globals, ctx context.Context) error {
	return call(&j.schedulerClient, g, "jobs resume", func(c *api.Client) ([]scheduler.Job, error) {
		job, err := c.Resume(ctx, j.ID)
		return []scheduler.Job{job}, err
	}, api.WriteJobs)
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
func (j *JobsLsCmd) Run(g *Globals, ctx context.Context) error {
	f := scheduler.JobFilter{Queue: j.Queue, Team: j.Team, State: scheduler.JobState(j.State), Limit: j.Limit}
	return call(&j.schedulerClient, g, "jobs ls", func(c *api.Client) ([]scheduler.Job, error) { return c.Jobs(ctx, f) }, api.WriteJobs)
}

// ActionsCmd groups the audit commands.
type ActionsCmd struct {
	Ls ActionsLsCmd `cmd:"" name:"ls" help:"List the scheduler's decisions, newest last."`
}

// ActionsLsCmd lists audit rows.
type ActionsLsCmd struct {
	schedulerClient
	Job      string        `help:"Only this job (all its attempts)."`
	Decision string        `help:"Only this decision: admit, borrow, reclaim, preempt, requeue, stop, expire, notify, kill, cancel, recommend, skip, reject, submit, finish, push."`
	Pool     string        `help:"Only this pool."`
	Team     string        `help:"Only this team's rows."`
	Since    time.Duration `help:"Only the last this long, e.g. 24h (default: all)."`
	Limit    int           `help:"At most this many, the newest." default:"50"`
}

// Run prints the rows.
func (a *ActionsLsCmd) Run(g *Globals, ctx context.Context) error {
	f := scheduler.ActionFilter{Job: a.Job, Decision: a.Decision, Pool: a.Pool, Team: a.Team, Limit: a.Limit}
	if a.Since > 0 {
		f.Since = time.Now().Add(-a.Since)
	}
	return call(&a.schedulerClient, g, "actions ls", func(c *api.Client) ([]scheduler.Action, error) { return c.Actions(ctx, f) }, api.WriteActions)
}
