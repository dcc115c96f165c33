package simrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	fleetsim "github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/scheduler"
	simexec "github.com/gpupool/gpupool/scheduler/executor/sim"
	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/schemas"
)

// Config is one run.
type Config struct {
	Sim fleetsim.Config
	// Duration is the simulated time to run.
	Duration time.Duration
	// Step is how often the fleet is advanced and the scheduler passes (the
	// analyzer's cadence).
	Step time.Duration
	// Enforce runs the scheduler's policies; false leaves the fleet alone.
	Enforce bool
	// Policies the scheduler runs (DefaultPolicies if nil).
	Policies []scheduler.Policy
	// Admission puts the scheduler in front of the fleet (Gate): it admits
	// every job by quota before the fleet places it, in both runs (without
	// Enforce it runs no policies). False: the fleet places its own jobs.
	Admission bool
	// Placed gives the scheduler the fleet's nodes (PlacedGateModel): it
	// places each job it admits on concrete GPU slots, with a reservation for
	// the head job that does not fit and backfill around it, jobs carry time
	// limits (Gate.TimeLimits), and the fleet runs each job where it was placed.
	// Only with Admission.
	Placed bool
	// Plan is the placement policy with Placed (zero: the model's default).
	Plan placement.PlanConfig
	// AdmitEvery is how often the fleet is advanced and the gate's arrivals
	// and ends handed over, within each Step (default 10 s: the fleet's tick).
	AdmitEvery time.Duration
	// IdleWindow and ZombieWindow are how long a condition lasts before the
	// analyzer reports it (its first_seen); policy delays count from its start.
	IdleWindow, ZombieWindow time.Duration
	// WrongCardWindow is how long a small job runs on a big card before the
	// analyzer reports wrong_card (its window, 2 h by default); 0 reports none.
	WrongCardWindow time.Duration
}

// DefaultConfig is a week of the demo fleet (2 clusters × 4 nodes × 8 GPUs, load
// 0.75), passes every 5 simulated minutes, enforcement on. Sim.Start must be set.
func DefaultConfig() Config {
	return Config{
		Sim: fleetsim.DefaultConfig(), Duration: 7 * 24 * time.Hour, Step: 5 * time.Minute, Enforce: true,
		IdleWindow: 30 * time.Minute, ZombieWindow: 10 * time.Minute, WrongCardWindow: 2 * time.Hour,
	}
}

// DefaultPolicies are the issue's, live: an idle dev job is notified after 30
// minutes and reclaimed (requeued) 15 minutes later; a zombie is killed after 10.
// A first step counts from when the scheduler first saw the finding, never from
// the finding's own claim of when the condition began, so the 30 and 10 minutes
// are the analyzer's windows (an idle finding needs 30 min of idle, a zombie 10
// min orphaned): the scheduler acts when it sees the finding.
func DefaultPolicies() []scheduler.Policy {
	return []scheduler.Policy{
		{Name: "dev-idle", Finding: schemas.KindIdle, Pools: []string{scheduler.PoolDev}, MaxActionsPerHour: 50,
			Steps: []scheduler.Step{{Action: scheduler.ActionNotify}, {Action: scheduler.ActionReclaim, After: 15 * time.Minute}}},
		{Name: "zombie-kill", Finding: schemas.KindZombie, MaxActionsPerHour: 50,
			Steps: []scheduler.Step{{Action: scheduler.ActionKill}}},
		{Name: "dev-wrong-card", Finding: schemas.KindWrongCard, Pools: []string{scheduler.PoolDev}, MaxActionsPerHour: 20,
			Steps: []scheduler.Step{{Action: scheduler.ActionNotify}, {Action: scheduler.ActionReclaim, After: 15 * time.Minute}}},
	}
}

// DefragmentPolicy carries out the fragmentation finding's moves: the
// checkpointable jobs of training-exp and inference-batch, once the finding
// has lasted 15 minutes, at most 8 jobs moved an hour. Not among
// DefaultPolicies: on the demo's fleet (one or two nodes of a card type per
// cluster) a moved job has nowhere to go; BenchmarkDefragmentDays measures it
// on a larger one.
func DefragmentPolicy() scheduler.Policy {
	return scheduler.Policy{Name: "defragment", Finding: schemas.KindFragmentation,
		Pools: []string{scheduler.PoolTrainingExp, scheduler.PoolInferenceBatch}, MaxActionsPerHour: 8,
		Steps: []scheduler.Step{{Action: scheduler.ActionReclaim, After: 15 * time.Minute}}}
}

// Validate checks the run's settings.
func (c Config) Validate() error {
	var errs []error
	if err := c.Sim.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("sim: %w", err))
	}
	if c.Duration < c.Step || c.Step <= 0 {
		errs = append(errs, fmt.Errorf("duration %s and step %s: want 0 < step ≤ duration", c.Duration, c.Step))
	}
	return errors.Join(errs...)
}

// Report is what one run measured.
type Report struct {
	Enforce bool
	// GPUs is the fleet's GPU units (whole GPUs and MIG instances).
	GPUs int
	// GPU-hours of capacity, allocated to jobs, idle while allocated, and held by
	// zombie or stray processes outside any job.
	CapacityGPUh, AllocatedGPUh, IdleGPUh, ZombieGPUh float64
	// Utilisation is allocated / capacity; Effective is (allocated − idle) /
	// capacity: the share of the fleet doing work.
	Utilisation, Effective float64
	// GoodputGPUh is the GPU-hours of jobs that were busy: allocated − idle.
	GoodputGPUh float64
	// Waits of the jobs that waited in the run (attempts submitted in it that no
	// scheduler requeued: new jobs and reruns of failed ones), submit to start; a
	// job still queued at the end counts with its wait so far. Jobs is how many.
	Jobs                       int
	WaitMean, WaitP50, WaitP95 time.Duration
	// RequeuedWaitP95 is the p95 wait of the attempts the scheduler requeued,
	// from their resubmission to their start, apart from the waiting jobs': a
	// reclaimed job's wait is the price of its reclaim, not the queue's.
	RequeuedWaitP95 time.Duration
	// Finished is how many attempts ended within the run; Requeued how many
	// attempts were requeues of a reclaimed one.
	Finished, Requeued int
	// Actions the scheduler took, by decision and outcome ("reclaim ok": 12).
	Actions map[string]int
	// Admission: the scheduler admitted the fleet's jobs; Refused counts those it
	// refused (the fleet ran them unadmitted).
	Admission bool
	Refused   int
	// With Placed: PlacementMisses is how many admitted jobs found a GPU the
	// scheduler placed them on busy (by what held it: MissReasons), and
	// PlacementsRun how many ran where they were placed, MIGPlacementsRun of
	// them on the MIG instances it gave them.
	PlacementMisses, PlacementsRun, MIGPlacementsRun int
	MissReasons                                      map[string]int
	// Conflicts counts GPUs the fleet said something outside the scheduler
	// held while the scheduler had given them to a job (Gate.Conflicts).
	Conflicts int
	// Large jobs (8 GPUs or more) submitted at least 6 h before the end:
	// how many, how many never started, and the longest wait (a job not
	// started counts its wait so far).
	LargeJobs, LargeNeverStarted int
	LargeMaxWait                 time.Duration
	// LargeStarved names each large job that never started: its key, GPUs,
	// card, cluster and submission, and with a scheduler its last wait reason.
	LargeStarved []string
}

// Run simulates cfg and measures it.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, fmt.Errorf("simrun: %w", err)
	}
	fleet, err := fleetsim.New(cfg.Sim)
	if err != nil {
		return Report{}, err
	}
	var mu sync.Mutex
	rec := scheduler.NewMemoryRecorder()
	var svc *scheduler.Service
	now := cfg.Sim.Start
	var gate *Gate
	if cfg.Enforce || cfg.Admission {
		ex, err := simexec.New(fleet, simexec.WithLock(&mu))
		if err != nil {
			return Report{}, err
		}
		sc := scheduler.DefaultConfig()
		sc.Policies = nil
		if cfg.Enforce {
			sc.Policies = cfg.Policies
			if sc.Policies == nil {
				sc.Policies = DefaultPolicies()
			}
		}
		if cfg.Admission {
			model := GateModel
			if cfg.Placed {
				model = PlacedGateModel
			}
			if sc.Model, err = model(fleet.Capacity()); err != nil {
				return Report{}, err
			}
			if cfg.Placed && cfg.Plan != (placement.PlanConfig{}) {
				sc.Model.Placement = cfg.Plan
			}
			gate = NewGate(nil)
			gate.TimeLimits = cfg.Placed
			fleet.SetGate(gate)
		}
		svc, err = scheduler.New(sc, scheduler.WithClock(func() time.Time { return now }), scheduler.WithRecorder(rec),
			scheduler.WithExecutor("", ex), scheduler.WithNotifier(&scheduler.MemoryNotifier{}))
		if err != nil {
			return Report{}, err
		}
		if cfg.Placed {
			fleet.SetPlacer(Placer(svc))
		}
	}
	admitEvery := cmp.Or(cfg.AdmitEvery, 10*time.Second)
	m := newMeter(cfg.Sim.Start)
	if err := m.weigh(ctx, fleet.Nodes(), cfg.Sim.Start); err != nil {
		return Report{}, err
	}
	end := cfg.Sim.Start.Add(cfg.Duration)
	for ; !now.After(end); now = now.Add(cfg.Step) {
		if err := ctx.Err(); err != nil {
			return Report{}, err
		}
		if gate != nil {
			// The scheduler admits at the fleet's pace, not the analyzer's.
			stepEnd := now
			for now = now.Add(-cfg.Step).Add(admitEvery); now.Before(stepEnd); now = now.Add(admitEvery) {
				if err := admitAt(ctx, fleet, &mu, gate, svc, m, now); err != nil {
					return Report{}, err
				}
			}
			now = stepEnd
		}
		mu.Lock()
		m.events(fleet.Advance(now))
		holding := fleet.Holding()
		mu.Unlock()
		if svc == nil {
			continue
		}
		if cfg.Enforce {
			if err := svc.AddFindings(ctx, m.findings(holding, now, cfg)); err != nil {
				return Report{}, err
			}
		}
		if gate != nil {
			if err := gate.Flush(ctx, svc, func(key string) error { return fleet.Admit(key, "") }); err != nil {
				return Report{}, err
			}
		}
		if err := svc.Pass(ctx); err != nil {
			return Report{}, err
		}
		if cfg.Placed {
			SyncReserved(fleet, svc)
		}
	}
	rep := m.report(end, fleet.GPUCount(), fleet.Truth())
	rep.Enforce, rep.Admission = cfg.Enforce, cfg.Admission
	if gate != nil {
		rep.Refused = gate.Refused
	}
	if cfg.Placed {
		rep.PlacementMisses, rep.PlacementsRun = fleet.PlacementMisses()
		rep.MIGPlacementsRun = fleet.MIGPlacementsRun()
		rep.MissReasons = fleet.PlacementMissReasons()
		rep.Conflicts = gate.Conflicts
	}
	slices.Sort(rep.LargeStarved)
	if svc != nil {
		why := map[string]string{}
		for _, j := range svc.Jobs(scheduler.JobFilter{State: scheduler.StateQueued}) {
			why[j.Spec.Name] = j.WaitReason
		}
		for i, s := range rep.LargeStarved {
			key, _, _ := strings.Cut(s, " ")
			if w, ok := why[key]; ok {
				rep.LargeStarved[i] += ": " + w
			}
		}
	}
	rep.Actions = map[string]int{}
	rows, _ := rec.Actions(ctx, scheduler.ActionFilter{})
	for _, a := range rows {
		rep.Actions[a.Decision+" "+a.Outcome]++
	}
	return rep, nil
}

// admitAt advances the fleet to now and, when it reported arrivals or ends, hands
// them to the scheduler and runs its pass.
func admitAt(ctx context.Context, fleet *fleetsim.Fleet, mu sync.Locker, gate *Gate, svc *scheduler.Service, m *meter, now time.Time) error {
	mu.Lock()
	m.events(fleet.Advance(now))
	mu.Unlock()
	if !gate.Pending() {
		return nil
	}
	if err := gate.Flush(ctx, svc, func(key string) error { return fleet.Admit(key, "") }); err != nil {
		return err
	}
	if err := svc.Pass(ctx); err != nil {
		return err
	}
	SyncReserved(fleet, svc)
	return nil
}

// attempt is one job attempt as the events tell it.
type attempt struct {
	key                      string
	submitMs, startMs, endMs int64
	uuids                    []string // the GPU units it holds
	asked                    int      // GPUs asked for at submit
	pool                     string
	known                    bool // a scheduler knows it (not a hand-started process)
	// requeued: the scheduler requeued the attempt rerunOf into this one.
	requeued bool
	rerunOf  string
}

// meter follows the fleet's job events. It counts GPU-hours in GPU units as
// the pipeline does (schemas.GPUWeight): a MIG slice its share of its GPU, a
// time-sliced GPU once however many jobs share it.
type meter struct {
	startMs  int64
	attempts map[string]*attempt
	// weight is each GPU unit's weight by UUID, as its node reports it;
	// capacity is their sum, the fleet in GPUs.
	weight   map[string]float64
	capacity float64
	// open holds the findings already reported, by truth, so a finding keeps
	// its ID while it holds and withdrawn ones are resolved.
	open map[string]schemas.Finding
}

func newMeter(start time.Time) *meter {
	return &meter{startMs: start.UnixMilli(), attempts: map[string]*attempt{}, open: map[string]schemas.Finding{}, weight: map[string]float64{}}
}

// weigh reads the fleet's GPU units from one sample of each node at at (the
// units a collector reports: a time-sliced GPU once, each MIG instance with its
// profile) and weighs each.
func (m *meter) weigh(ctx context.Context, nodes []*fleetsim.Node, at time.Time) error {
	for _, n := range nodes {
		var b schemas.SampleBatch
		if err := n.Sample(ctx, at, &b); err != nil {
			return fmt.Errorf("simrun: weigh the fleet's GPUs: %w", err)
		}
		for _, g := range b.GPUs {
			w := schemas.GPUWeight(g.Card, g.MIGProfile)
			m.weight[g.GPUUUID] = w
			m.capacity += w
		}
	}
	return nil
}

// weightOf is the GPUs the units uuids count as (a unit no node reported
// counts 1).
func (m *meter) weightOf(uuids []string) float64 {
	sum := 0.0
	for _, u := range uuids {
		if w, ok := m.weight[u]; ok {
			sum += w
		} else {
			sum++
		}
	}
	return sum
}

func (m *meter) events(evs []schemas.JobEvent) {
	for _, e := range evs {
		a := m.attempts[e.Job]
		if a == nil {
			a = &attempt{key: e.Job, submitMs: -1, startMs: -1, endMs: -1}
			m.attempts[e.Job] = a
		}
		switch e.Event {
		case schemas.EventSubmit:
			a.submitMs, a.pool, a.known, a.rerunOf, a.asked = e.TimeMs, e.Pool, e.Source != schemas.SourceProcess, e.RerunOf, int(e.GPUs)
		case schemas.EventRequeue:
			a.requeued = true
		case schemas.EventStart:
			a.startMs, a.uuids = e.TimeMs, e.GPUUUIDs
		case schemas.EventEnd:
			a.endMs = e.TimeMs
		}
	}
}

// findings turns what holds now into the analyzer's findings: those that have
// lasted their detection window, plus a resolution for each that stopped holding.
func (m *meter) findings(holding []fleetsim.Truth, now time.Time, cfg Config) []schemas.Finding {
	seen := map[string]bool{}
	var out []schemas.Finding
	for _, tr := range holding {
		var window time.Duration
		switch tr.Kind {
		case schemas.KindIdle:
			window = cfg.IdleWindow
		case schemas.KindZombie:
			window = cfg.ZombieWindow
		case schemas.KindWrongCard:
			if window = cfg.WrongCardWindow; window <= 0 {
				continue
			}
		default:
			continue
		}
		if now.Sub(tr.Start) < window {
			continue
		}
		id := fmt.Sprintf("%s/%s/%s/%d/%d", tr.Kind, tr.Job, tr.Node, tr.PID, tr.Start.UnixMilli())
		seen[id] = true
		f := schemas.Finding{
			ID: id, Episode: 1, Kind: tr.Kind, Severity: schemas.SeverityWarning, Job: tr.Job, Team: tr.Team, Node: tr.Node,
			PID: tr.PID, GPUUUIDs: tr.GPUUUIDs, Since: tr.Start, FirstSeen: tr.Start.Add(window), LastSeen: now,
		}
		if a := m.attempts[tr.Job]; a != nil {
			f.Pool = a.pool
		}
		if tr.Kind == schemas.KindZombie {
			f.Job = "" // the process outlived its job: the kill is on the node, not the job
		}
		m.open[id] = f
		out = append(out, f)
	}
	for id, f := range m.open {
		if !seen[id] {
			f.State = schemas.StateResolved
			out = append(out, f)
			delete(m.open, id)
		}
	}
	return out
}

// report sums the run up to end, in GPU units (weight): a unit held by
// several attempts at once (a time-sliced GPU) counts once, as the pipeline's
// chargeback shares it out.
func (m *meter) report(end time.Time, gpus int, truth []fleetsim.Truth) Report {
	endMs := end.UnixMilli()
	hours := func(ms int64) float64 { return float64(ms) / 3.6e6 }
	r := Report{GPUs: gpus, CapacityGPUh: m.capacity * hours(endMs-m.startMs)}
	var waits, requeued []int64
	held := map[string][][2]int64{}
	for _, a := range m.attempts {
		if a.startMs >= 0 {
			stop := endMs
			if a.endMs >= 0 {
				stop = min(a.endMs, endMs)
				r.Finished++
			}
			for _, u := range a.uuids {
				held[u] = append(held[u], [2]int64{max(a.startMs, m.startMs), stop})
			}
		}
		if a.requeued {
			r.Requeued++
		}
		if !a.known || a.submitMs <= m.startMs && !a.requeued {
			continue // hand-started processes never wait; jobs found running at the start did not wait in this run
		}
		var w int64
		switch {
		case a.startMs >= 0:
			w = a.startMs - a.submitMs
		case a.endMs < 0:
			w = endMs - a.submitMs
		}
		if a.asked >= 8 && !a.requeued && a.submitMs > m.startMs && a.submitMs <= endMs-6*3600*1000 {
			r.LargeJobs++
			if a.startMs < 0 {
				r.LargeNeverStarted++
				r.LargeStarved = append(r.LargeStarved, fmt.Sprintf("%s (%d GPUs, %s, submitted %s)", a.key, a.asked, a.pool,
					time.UnixMilli(a.submitMs).UTC().Format("15:04")))
			}
			r.LargeMaxWait = max(r.LargeMaxWait, time.Duration(w)*time.Millisecond)
		}
		if a.requeued {
			requeued = append(requeued, w)
		} else if a.submitMs > m.startMs {
			waits = append(waits, w)
		}
	}
	for u, spans := range held {
		r.AllocatedGPUh += m.weightOf([]string{u}) * hours(covered(spans))
	}
	for _, tr := range truth {
		stop := endMs
		if !tr.End.IsZero() {
			stop = min(tr.End.UnixMilli(), endMs)
		}
		held := hours(stop - max(tr.Start.UnixMilli(), m.startMs))
		switch tr.Kind {
		case schemas.KindIdle:
			r.IdleGPUh += m.weightOf(tr.GPUUUIDs) * held
		case schemas.KindZombie:
			w := m.weightOf(tr.GPUUUIDs)
			if len(tr.GPUUUIDs) == 0 {
				w = 1 // a process on no known unit: its GPU
			}
			r.ZombieGPUh += w * held
		}
	}
	r.Utilisation = r.AllocatedGPUh / r.CapacityGPUh
	r.GoodputGPUh = r.AllocatedGPUh - r.IdleGPUh
	r.Effective = r.GoodputGPUh / r.CapacityGPUh
	if len(requeued) > 0 {
		slices.Sort(requeued)
		r.RequeuedWaitP95 = time.Duration(quantile(requeued, 0.95)) * time.Millisecond
	}
	r.Jobs = len(waits)
	if len(waits) > 0 {
		slices.Sort(waits)
		sum := 0.0
		for _, w := range waits {
			sum += float64(w)
		}
		r.WaitMean = time.Duration(sum/float64(len(waits))) * time.Millisecond
		r.WaitP50 = time.Duration(quantile(waits, 0.5)) * time.Millisecond
		r.WaitP95 = time.Duration(quantile(waits, 0.95)) * time.Millisecond
	}
	return r
}

// covered is the time the spans [from, to) cover together, in ms.
func covered(spans [][2]int64) int64 {
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var sum, reach int64
	for i, s := range spans {
		if i == 0 || s[0] > reach {
			sum += max(s[1]-s[0], 0)
			reach = s[1]
		} else if s[1] > reach {
			sum += s[1] - reach
			reach = s[1]
		}
	}
	return sum
}

// quantile is the nearest-rank quantile of sorted xs.
func quantile(xs []int64, q float64) int64 {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// String is the report on one line.
func (r Report) String() string {
	mode := "off"
	if r.Enforce {
		mode = "on"
	}
	return fmt.Sprintf("enforcement %-3s  utilisation %5.1f%%  effective %5.1f%%  goodput %7.1f GPU-h  idle-while-allocated %7.1f GPU-h  zombie-held %6.1f GPU-h  waiting jobs' wait p50 %s p95 %s (%d jobs)  requeued attempts' wait p95 %s (%d)",
		mode, 100*r.Utilisation, 100*r.Effective, r.GoodputGPUh, r.IdleGPUh, r.ZombieGPUh, r.WaitP50.Round(time.Second), r.WaitP95.Round(time.Second), r.Jobs,
		r.RequeuedWaitP95.Round(time.Second), r.Requeued)
}
