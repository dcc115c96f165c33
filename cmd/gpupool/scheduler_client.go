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
	api.SubmitFlags
	IdempotencyKey string `name:"idempotency-key" help:"Key that makes a retried submit queue its job once (default: a random one, reused across this command's own retries; pass your own to retry across runs)."`
	Retries        int    `default:"3" help:"Retries when the scheduler is unreachable or fails (the same idempotency key each time)."`
}

// Run submits the job and prints its ID.
func (s *SubmitCmd) Run(g *Globals, ctx context.Context) error {
	c, err := s.client(g)
	if err != nil {
		return err
	}
	j, err := c.SubmitRetrying(ctx, s.Spec(), s.IdempotencyKey, s.Retries)
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
