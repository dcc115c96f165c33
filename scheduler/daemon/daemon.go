package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
	"github.com/gpupool/gpupool/scheduler/audit"
	"github.com/gpupool/gpupool/scheduler/executor/agentexec"
	"github.com/gpupool/gpupool/scheduler/executor/kubernetes"
	"github.com/gpupool/gpupool/scheduler/executor/slurm"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/backend"
)

// publishTimeout bounds one publish of the scheduler's job events, retries
// included: a pass logs and counts a failed publish and goes on, so NATS being
// down never holds the scheduler's loop.
const publishTimeout = 10 * time.Second

var _ scheduler.Publisher = (*bus.JobPublisher)(nil)

// Config is what the daemon runs on.
type Config struct {
	Scheduler scheduler.Config
	Store     backend.Config
	Bus       bus.Config
	// Auth is how the API's callers prove who they are (resolved: its files
	// named).
	Auth auth.Config
	// StateFile keeps the jobs across restarts.
	StateFile string
	// Memory keeps the audit trail and the jobs in memory and publishes nothing:
	// no store, no bus, no state file (a restart forgets what it did).
	Memory bool
}

// Validate refuses what cannot run: the demo's sim executor, an API open to
// anyone or in clear text on the network (auth.CheckListen), and in memory mode
// the settings that need the store or the bus.
func (c Config) Validate() error {
	if err := c.Auth.Validate(); err != nil {
		return schemas.PrefixFields("auth", err)
	}
	if _, err := c.Auth.CheckListen(c.Scheduler.Listen); err != nil {
		return schemas.Fieldf("scheduler.listen", "%w", err)
	}
	if c.Scheduler.Executor == scheduler.ExecutorSim {
		return schemas.Field("scheduler.executor", errors.New(`"sim" acts on the simulated fleet of "gpupool demo" and only works inside it; use "none" for a standalone scheduler`))
	}
	if !c.Memory {
		return nil
	}
	if c.Scheduler.Findings == "store" {
		return errors.New(`--memory has no store to read findings from: set scheduler.findings to "none" and POST them to /v1/findings`)
	}
	if c.Scheduler.UsesExecutor(scheduler.ExecutorAgent) {
		return errors.New(`--memory has no bus for the agent executor to reach the node agents: drop "agent" from scheduler.executor, or run without --memory`)
	}
	return nil
}

// Daemon is a scheduler service with what it is connected to.
type Daemon struct {
	cfg   Config
	log   *slog.Logger
	svc   *scheduler.Service
	store store.Store
	bus   *bus.Conn
	guard *auth.Guard
	tls   *tls.Config
	// inventory compares the model's nodes with the collectors' reports (a
	// model with nodes and a store; nil otherwise).
	inventory *inventoryCheck
}

// Option changes how a Daemon is built.
type Option func(*options)

type options struct {
	log *slog.Logger
	reg prometheus.Registerer
}

// WithLogger sets the logger (default: discarded).
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// WithRegisterer registers the scheduler's metrics with reg (default: kept, not
// registered).
func WithRegisterer(reg prometheus.Registerer) Option { return func(o *options) { o.reg = reg } }

// Open connects the store and the bus (unless Config.Memory), builds the
// executors and the service.
func Open(ctx context.Context, cfg Config, opts ...Option) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	d := &Daemon{cfg: cfg, log: o.log}
	if err := d.openGuard(ctx, o.reg); err != nil {
		return nil, err
	}
	sopts := []scheduler.Option{scheduler.WithLogger(o.log), scheduler.WithMetrics(scheduler.NewMetrics(o.reg))}
	var nc *nats.Conn
	if !cfg.Memory {
		more, err := d.connect(ctx)
		if err != nil {
			d.Close()
			return nil, err
		}
		sopts, nc = append(sopts, more...), d.bus.NC
	}
	execs, err := executors(cfg.Scheduler, nc, o.log)
	if err != nil {
		d.Close()
		return nil, err
	}
	if d.svc, err = scheduler.New(cfg.Scheduler, append(sopts, execs...)...); err != nil {
		d.Close()
		return nil, err
	}
	if fleet := cfg.Scheduler.Model.Fleet(); len(fleet.Clusters) > 0 && d.store != nil {
		d.inventory = newInventoryCheck(fleet, audit.NewStoreInventory(d.store), o.log, o.reg)
	}
	return d, nil
}

// openGuard makes the first admin token if there is none yet (token mode),
// builds the API's guard and loads the listener's TLS.
func (d *Daemon) openGuard(ctx context.Context, reg prometheus.Registerer) error {
	a := d.cfg.Auth
	warnings, _ := a.CheckListen(d.cfg.Scheduler.Listen) // refusals: Validate
	for _, w := range warnings {
		d.log.Warn("scheduler API is not protected", "why", w)
	}
	if a.Mode == auth.ModeToken && a.GenerateAdminToken {
		created, err := auth.EnsureAdminToken(a.TokensFile, a.AdminTokenFile)
		if err != nil {
			return err
		}
		msg := "admin token"
		if created {
			msg = "admin token created"
		}
		d.log.Info(msg, "file", a.AdminTokenFile, "tokens_file", a.TokensFile,
			"use", "the gpupool commands read it when given no --token-file or GPUPOOL_TOKEN")
	}
	var err error
	if d.guard, err = auth.New(ctx, a, auth.WithLogger(d.log), auth.WithMetrics(auth.NewMetrics(reg))); err != nil {
		return err
	}
	d.tls, err = auth.ServerTLS(a.TLS)
	return err
}

// connect opens the store (the audit trail, the open findings) and the bus (job
// events, notices), and returns the scheduler's options for them.
func (d *Daemon) connect(ctx context.Context) ([]scheduler.Option, error) {
	var err error
	if d.store, err = backend.OpenMigrated(ctx, d.cfg.Store, d.log); err != nil {
		return nil, err
	}
	opts := []scheduler.Option{scheduler.WithRecorder(audit.NewStoreRecorder(d.store)), scheduler.WithStateFile(d.cfg.StateFile)}
	if d.cfg.Scheduler.Findings == "store" {
		opts = append(opts, scheduler.WithFindingSource(audit.NewStoreFindings(d.store)))
	}
	if d.cfg.Bus.URL == "" {
		d.log.Warn("no bus.url: job events and notices go to an embedded NATS server only this process uses; set bus.url to reach ingest and the alerter")
	}
	if d.bus, err = bus.Open(ctx, d.cfg.Bus, "gpupool-scheduler", d.log); err != nil {
		return nil, err
	}
	// Its own subjects (gpupool.jobs.<cluster>.scheduler): ingest accepts events of
	// source scheduler only there, and no collector credential may publish there.
	// Message IDs from the content: the outbox publishes a batch again after a
	// failure or a restart, and the stream stores it once.
	jobs, err := bus.NewJobPublisher(bus.JetStreamSender{JS: d.bus.JS}, bus.ProducerName("scheduler"),
		bus.WithLogger(d.log), bus.WithTimeout(publishTimeout), bus.AsScheduler(), bus.WithContentIDs())
	if err != nil {
		return nil, err
	}
	return append(opts, scheduler.WithPublisher(jobs), scheduler.WithNotifier(audit.NewBusNotifier(d.bus.JS))), nil
}

// executors builds the executors c.Executor lists, each for the jobs of its
// source: kubernetes for k8s/ jobs, slurm for slurm/ jobs, agent for processes. nc
// is the bus connection the agent executor sends over (nil: none).
func executors(c scheduler.Config, nc *nats.Conn, log *slog.Logger) ([]scheduler.Option, error) {
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

// Ready reports whether the daemon can do its work: its bus connection is up (in
// memory mode, always).
func (d *Daemon) Ready() error {
	if d.bus == nil {
		return nil
	}
	return d.bus.Ready()
}

// Run serves the API on scheduler.listen and runs admission and policies until
// ctx ends.
func (d *Daemon) Run(ctx context.Context) error {
	addr, err := api.Serve(ctx, d.cfg.Scheduler.Listen, api.NewHandler(d.svc, d.guard, api.WithLogger(d.log)), d.tls, d.log)
	if err != nil {
		return err
	}
	scheme := "http://"
	if d.tls != nil {
		scheme = "https://"
	}
	d.log.Info("scheduler API", "url", scheme+addr, "auth", d.cfg.Auth.Mode, "queues", len(d.cfg.Scheduler.Queues), "policies", len(d.cfg.Scheduler.Policies))
	if d.inventory != nil {
		go d.inventory.run(ctx)
	}
	return d.svc.Run(ctx)
}

// Close closes the bus connection and the store.
func (d *Daemon) Close() {
	if d.bus != nil {
		d.bus.Close()
	}
	if d.store != nil {
		_ = d.store.Close()
	}
}
