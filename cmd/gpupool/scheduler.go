package main

import (
	"context"
	"path/filepath"

	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/scheduler/daemon"
)

// SchedulerCommands are the enforcement scheduler's subcommands: the service and
// the commands that talk to its HTTP API.
type SchedulerCommands struct {
	Scheduler SchedulerCmd `cmd:"" help:"Run the enforcement scheduler: queues and quotas, admission, policies on findings, its HTTP API."`
	Submit    SubmitCmd    `cmd:"" help:"Submit a job to a running scheduler."`
	Queue     QueueCmd     `cmd:"" help:"Queues of a running scheduler."`
	Jobs      JobsCmd      `cmd:"" help:"Jobs of a running scheduler."`
	Actions   ActionsCmd   `cmd:"" help:"The scheduler's audit trail: every decision and why."`
}

// SchedulerCmd runs the scheduler service until interrupted.
type SchedulerCmd struct {
	Listen  string `help:"Address of the HTTP API (default scheduler.listen, 127.0.0.1:9470)."`
	Memory  bool   `help:"Keep the audit trail and the jobs in memory and publish nothing: no store, no NATS, no job state file (to try the scheduler out; a restart forgets what it did)."`
	Metrics string `help:"Address for /metrics, /healthz, /readyz (e.g. :9466); empty disables."`
}

// Run loads the configuration, connects the audit trail, job events, notices and
// findings, serves the API and runs admission and policies.
func (s *SchedulerCmd) Run(g *Globals, ctx context.Context) error {
	c, log, err := g.setup(func(c *config.Config) {
		setIf(&c.Scheduler.Listen, s.Listen)
		withMetrics(s.Metrics)(c)
	})
	if err != nil {
		return err
	}
	reg := newRegistry()
	d, err := daemon.Open(ctx, daemon.Config{
		Scheduler: c.Scheduler, Store: c.Store, Bus: c.Bus, Auth: c.Auth, Memory: s.Memory,
		StateFile: filepath.Join(c.DataDir, "scheduler", "jobs.json"),
	}, daemon.WithLogger(log), daemon.WithRegisterer(reg))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := serveMetrics(ctx, c.MetricsListen, c, reg, d.Ready, log); err != nil {
		return err
	}
	return d.Run(ctx)
}
