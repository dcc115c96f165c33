package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
	"github.com/gpupool/gpupool/scheduler/audit"
	"github.com/gpupool/gpupool/scheduler/executor/agentexec"
	"github.com/gpupool/gpupool/scheduler/executor/kubernetes"
	"github.com/gpupool/gpupool/scheduler/executor/slurm"
	"github.com/gpupool/gpupool/schemas"
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
	c, err := g.loadConfig()
	if err != nil {
		return err
	}
	if s.Listen != "" {
		c.Scheduler.Listen = s.Listen
	}
	if s.Metrics != "" {
		c.MetricsListen = s.Metrics
	}
	if err := g.finish(&c); err != nil {
		return err
	}
	if c.Scheduler.Executor == "sim" {
		return errors.New(`scheduler.executor: "sim" acts on the simulated fleet of "gpupool demo" and only works inside it; use "none" for a standalone scheduler`)
	}
	log := newLogger(c.LogLevel)
	reg := newRegistry()
	opts := []scheduler.Option{scheduler.WithLogger(log), scheduler.WithMetrics(scheduler.NewMetrics(reg))}
	ready := func() error { return nil }
	var nc *nats.Conn
	if s.Memory {
		if c.Scheduler.Findings == "store" {
			return errors.New(`--memory has no store to read findings from: set scheduler.findings to "none" and POST them to /v1/findings`)
		}
		if c.Scheduler.UsesExecutor(scheduler.ExecutorAgent) {
			return errors.New(`--memory has no bus for the agent executor to reach the node agents: drop "agent" from scheduler.executor, or run without --memory`)
		}
	} else {
		st, err := openMigrated(ctx, c, log)
		if err != nil {
			return err
		}
		defer st.Close()
		opts = append(opts, scheduler.WithRecorder(audit.NewStoreRecorder(st)),
			scheduler.WithStateFile(filepath.Join(c.DataDir, "scheduler", "jobs.json")))
		if c.Scheduler.Findings == "store" {
			opts = append(opts, scheduler.WithFindingSource(audit.NewStoreFindings(st)))
		}
		if c.Bus.URL == "" {
			log.Warn("no bus.url: job events and notices go to an embedded NATS server only this process uses; set bus.url to reach ingest and the alerter")
		}
		b, err := openBus(ctx, c, "gpupool-scheduler", log)
		if err != nil {
			return err
		}
		defer b.Close()
		ready, nc = b.ready, b.nc
		jobs, err := schedulerJobPublisher(b.js, log)
		if err != nil {
			return err
		}
		opts = append(opts, scheduler.WithPublisher(jobs), scheduler.WithNotifier(audit.NewBusNotifier(b.js)))
	}
	execs, err := schedulerExecutors(c.Scheduler, nc, log)
	if err != nil {
		return err
	}
	opts = append(opts, execs...)
	svc, err := scheduler.New(c.Scheduler, opts...)
	if err != nil {
		return err
	}
	addr, err := api.Serve(ctx, c.Scheduler.Listen, api.NewHandler(svc, log), log)
	if err != nil {
		return err
	}
	log.Info("scheduler API", "url", "http://"+addr, "queues", len(c.Scheduler.Queues), "policies", len(c.Scheduler.Policies))
	if err := serveMetrics(ctx, c.MetricsListen, reg, ready, log); err != nil {
		return err
	}
	return svc.Run(ctx)
}

// schedulerExecutors builds the executors scheduler.executor lists, each for the
// jobs of its source: kubernetes for k8s/ jobs, slurm for slurm/ jobs, agent for
// processes. nc is the bus connection the agent executor sends over (nil: none).
func schedulerExecutors(c scheduler.Config, nc *nats.Conn, log *slog.Logger) ([]scheduler.Option, error) {
	var opts []scheduler.Option
	for _, name := range c.ExecutorNames() {
		switch name {
		case scheduler.ExecutorKubernetes:
			ex, err := kubernetes.New(c.Kubernetes, kubernetes.WithLogger(log))
			if err != nil {
				return nil, fmt.Errorf("scheduler.kubernetes: %w", err)
			}
			opts = append(opts, scheduler.WithExecutor(schemas.SourceKubernetes, ex))
		case scheduler.ExecutorSlurm:
			ex, err := slurm.New(c.Slurm, slurm.WithLogger(log))
			if err != nil {
				return nil, fmt.Errorf("scheduler.slurm: %w", err)
			}
			opts = append(opts, scheduler.WithExecutor(schemas.SourceSlurm, ex))
		case scheduler.ExecutorAgent:
			if nc == nil {
				return nil, errors.New("scheduler.agent: no bus connection to reach the node agents over (set bus.url)")
			}
			ex, err := agentexec.New(c.Agent, nc, agentexec.WithLogger(log))
			if err != nil {
				return nil, fmt.Errorf("scheduler.agent: %w", err)
			}
			opts = append(opts, scheduler.WithExecutor(schemas.SourceProcess, ex))
		}
	}
	return opts, nil
}

// schedulerPublishTimeout bounds one publish of the scheduler's job events,
// retries included: a pass logs and counts a failed publish and goes on, so NATS
// being down never holds the scheduler's loop.
const schedulerPublishTimeout = 10 * time.Second

var _ scheduler.Publisher = (*bus.JobPublisher)(nil)

// schedulerJobPublisher publishes the scheduler's job events on js.
func schedulerJobPublisher(js jetstream.JetStream, log *slog.Logger) (*bus.JobPublisher, error) {
	return bus.NewJobPublisher(bus.JetStreamSender{JS: js}, bus.ProducerName("scheduler"),
		bus.WithLogger(log), bus.WithTimeout(schedulerPublishTimeout))
}
