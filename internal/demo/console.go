package demo

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/console"
	"github.com/gpupool/gpupool/scheduler"
)

// WithConsole serves the web console on addr over the demo's store while the
// simulation runs, and after the summary until ctx ends (default: no console).
func WithConsole(addr string) Option { return func(d *Demo) { d.consoleAddr = addr } }

// startConsole starts the console over the demo's store, behind the auth:
// section's tokens (an admin token is written to the data directory when there
// is none), and prints its URL and the token.
func (d *Demo) startConsole(ctx context.Context) error {
	a := d.cfg.Auth
	token := "(none needed: auth.mode is none)"
	if a.Mode == auth.ModeToken {
		if _, err := auth.EnsureAdminToken(a.TokensFile, a.AdminTokenFile); err != nil {
			return fmt.Errorf("demo: console token: %w", err)
		}
		data, err := os.ReadFile(a.AdminTokenFile)
		if err != nil {
			return fmt.Errorf("demo: console token: %w", err)
		}
		token = strings.TrimSpace(string(data))
	}
	g, err := auth.New(ctx, a, auth.WithLogger(d.log))
	if err != nil {
		return err
	}
	cfg := d.cfg.Console // the file's console section, on the demo's address
	cfg.Listen = d.consoleAddr
	// The console says what the policies will do: the demo's, when they run.
	policies := d.cfg.Scheduler.Policies
	if d.enforce {
		policies = Policies()
	}
	opts := []console.Option{console.WithPolicies(policies)}
	if d.loop != nil {
		// The Pools page reads the demo's own scheduler: quotas, use,
		// borrowed and lent GPUs, waiting jobs, reservations and reclaim
		// candidates, live.
		opts = append(opts, console.WithScheduler(schedView{d.loop.svc}))
	}
	d.label(ctx, CompConsole, func(ctx context.Context) { d.consoleURL, err = console.Start(ctx, cfg, d.store, g, d.log, opts...) })
	if err != nil {
		return err
	}
	d.consoleToken = token
	d.printConsole()
	return nil
}

// schedView is the demo's in-process scheduler as the console reads one.
type schedView struct{ svc *scheduler.Service }

func (v schedView) Queues(context.Context) ([]scheduler.QueueStatus, error) {
	return v.svc.Queues(), nil
}

func (v schedView) Model(context.Context) (scheduler.Model, error) { return v.svc.Model(), nil }

func (v schedView) Jobs(_ context.Context, f scheduler.JobFilter) ([]scheduler.Job, error) {
	return v.svc.Jobs(f), nil
}

var _ console.Scheduler = schedView{}

// printConsole says where the console is and how to log in.
func (d *Demo) printConsole() {
	fmt.Fprintf(d.out, "Console: %s   token: %s   (also in %s)\n", d.consoleURL, d.consoleToken, d.cfg.Auth.AdminTokenFile)
}
