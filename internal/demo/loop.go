package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/internal/simrun"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/audit"
	simexec "github.com/gpupool/gpupool/scheduler/executor/sim"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// loop is gpupool's scheduler over the demo's fleet, in two roles. As the
// fleet's admission (demo.admission: scheduler, the default) it stands in front
// of the fleet's clusters as Kueue stands in front of kube-scheduler: every job
// waits, suspended, until the scheduler admits it by quota, priority and fair
// share (internal/simrun.Gate), then the sim executor resumes it and the fleet
// places it; this runs after every fleet tick, in both runs. With enforcement
// it also closes the loop: after each analyzer pass it reads the findings the
// pass published on the bus (gpupool.findings.>), hands them to the scheduler,
// and runs the scheduler's pass at the same simulated time: its policies notify
// the owners (gpupool.alerts.>) and reclaim idle dev jobs and kill zombies
// through the sim executor, which stops them in the fleet. Every decision goes
// to the actions table with the finding that caused it and the executor's
// result. It runs in the fleet driver's goroutine, between ticks (passes run
// inline), so the fleet is never touched concurrently and a seed gives the same
// decisions every run.
type loop struct {
	svc   *scheduler.Service
	fleet *sim.Fleet
	gate  *simrun.Gate
	cons  jetstream.Consumer
	now   time.Time
	read  int // finding messages read
	err   error
	// tickTook is the wall time the admission passes took.
	tickTook time.Duration
}

// Policies are the demo's, those of simrun's benchmark: an idle dev job is
// notified after 30 minutes and reclaimed 15 minutes later; a zombie is killed
// after 10.
func Policies() []scheduler.Policy { return simrun.DefaultPolicies() }

// startLoop builds the scheduler over the fleet: with admit, in front of it
// (the gate), placing the jobs on the fleet's nodes with place; with enforce,
// running the policies on the findings on the bus.
func startLoop(ctx context.Context, st store.Store, b *bus.Conn, fleet *sim.Fleet, start time.Time, log *slog.Logger, admit, place, enforce bool) (*loop, error) {
	ex, err := simexec.New(fleet)
	if err != nil {
		return nil, err
	}
	l := &loop{now: start, fleet: fleet}
	sc := scheduler.DefaultConfig()
	sc.Policies = nil
	if enforce {
		sc.Policies = Policies()
	}
	if admit {
		// With place, the scheduler places jobs on the fleet's nodes, with
		// reservations and backfill, and the fleet runs them where it placed
		// them; without, it admits by GPUs free per card and cluster and the
		// fleet places them.
		model := simrun.GateModel
		if place {
			model = simrun.PlacedGateModel
		}
		if sc.Model, err = model(fleet.Capacity()); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		l.gate = simrun.NewGate(log.With("component", "gate"))
		l.gate.TimeLimits = place
		if place {
			fleet.SetGate(l.gate)
		} else {
			// The fleet places the jobs: the slots it holds outside the
			// scheduler are its own business (gateOnly is no sim.OutsideGate).
			fleet.SetGate(gateOnly{l.gate})
		}
	}
	l.svc, err = scheduler.New(sc, scheduler.WithClock(func() time.Time { return l.now }),
		scheduler.WithRecorder(audit.NewStoreRecorder(st)), scheduler.WithNotifier(audit.NewBusNotifier(b.JS)),
		scheduler.WithExecutor("", ex), scheduler.WithLogger(log),
		scheduler.WithSleep(func(context.Context, time.Duration) error { return nil })) // simulated time: no wall-clock backoff
	if err != nil {
		return nil, fmt.Errorf("demo: scheduler: %w", err)
	}
	if err := l.svc.Start(ctx); err != nil {
		return nil, fmt.Errorf("demo: scheduler: %w", err)
	}
	if admit && place {
		fleet.SetPlacer(simrun.Placer(l.svc))
	}
	if !enforce {
		return l, nil
	}
	l.cons, err = b.JS.OrderedConsumer(ctx, bus.StreamFindings, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{bus.FindingsPrefix + ".>"},
	})
	if err != nil {
		return nil, fmt.Errorf("demo: subscribe to the findings: %w", err)
	}
	return l, nil
}

// gateOnly is the gate without its OutsideGate half.
type gateOnly struct{ sim.Gate }

// tick hands the jobs the fleet queued and ended by now to the scheduler and,
// when there were any, runs its pass: what it admits starts at the next tick.
func (l *loop) tick(ctx context.Context, now time.Time) {
	if l.gate == nil || !l.gate.Pending() || l.err != nil {
		return
	}
	start := time.Now()
	defer func() { l.tickTook += time.Since(start) }()
	// The driver calls after each tick with the next tick's time; the fleet is
	// at this one's, where what is admitted now starts.
	l.now = l.fleet.Stats().Now
	err := l.gate.Flush(ctx, l.svc, func(key string) error { return l.fleet.Admit(key, "") })
	if err == nil {
		err = l.svc.Pass(ctx)
	}
	if err == nil {
		simrun.SyncReserved(l.fleet, l.svc) // hand-started work keeps off reserved GPUs
	}
	if err != nil && ctx.Err() == nil {
		l.err = fmt.Errorf("demo: admission at %s: %w", now.Format(time.RFC3339), err)
	}
}

// pass reads the findings published so far and runs the scheduler at at.
func (l *loop) pass(ctx context.Context, at time.Time) error {
	if l.cons == nil {
		return nil // no policies: nothing to hand over
	}
	fs, err := l.findings(ctx)
	if err != nil {
		return err
	}
	l.now = at
	if err := l.svc.AddFindings(ctx, fs); err != nil {
		return fmt.Errorf("demo: hand the findings to the scheduler: %w", err)
	}
	if err := l.svc.Pass(ctx); err != nil {
		return err
	}
	if l.gate != nil {
		simrun.SyncReserved(l.fleet, l.svc)
	}
	return nil
}

// findings reads every finding message on the stream not read yet: the pass that
// just ran published its own before returning, so none is left behind.
func (l *loop) findings(ctx context.Context) ([]schemas.Finding, error) {
	var out []schemas.Finding
	for range 10000 {
		info, err := l.cons.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("demo: findings consumer: %w", err)
		}
		if info.NumPending == 0 {
			return out, nil
		}
		batch, err := l.cons.Fetch(int(min(info.NumPending, 500)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, fmt.Errorf("demo: read the findings: %w", err)
		}
		for m := range batch.Messages() {
			l.read++
			fm, err := schemas.DecodeFindingMessage(m.Data())
			if err != nil || fm.Event == schemas.EventNotice {
				continue // not the analyzer's (a notice, or malformed: ingest dead-letters those)
			}
			f := fm.Finding
			if fm.Event == schemas.EventResolved {
				f.State = schemas.StateResolved
			}
			out = append(out, f)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, fmt.Errorf("demo: read the findings: %w", err)
		}
	}
	return nil, errors.New("demo: the findings kept coming: gave up reading them")
}

// actions counts the scheduler's decisions by decision and outcome; reclaims of
// borrowed GPUs (no policy) count as quota-reclaim.
func (l *loop) actions(ctx context.Context) (map[string]int, error) {
	rows, err := l.svc.Actions(ctx, scheduler.ActionFilter{})
	if err != nil {
		return nil, err
	}
	n := map[string]int{}
	for _, a := range rows {
		if a.Decision == scheduler.DecReclaim && a.Policy == "" {
			n["quota-reclaim "+a.Outcome]++ // borrowed GPUs given back to their queue
			continue
		}
		n[a.Decision+" "+a.Outcome]++
	}
	return n, nil
}
