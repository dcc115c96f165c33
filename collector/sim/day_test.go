package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// checkEvents checks the job event stream as the store would merge it: every
// event valid and in time order, every start after a submit (and with an admit),
// every end after a start, reruns pointing at failed attempts. It returns each
// started job's queue wait in ms.
func checkEvents(t *testing.T, events []schemas.JobEvent) map[string]int64 {
	t.Helper()
	type life struct{ submit, admit, start, end *schemas.JobEvent }
	jobs := map[string]*life{}
	failed := map[string]bool{}
	waits := map[string]int64{}
	pools := []string{poolTrainingExp, poolTrainingProd, poolInferenceOnline, poolInferenceBatch, poolDev}
	workloads := []string{schemas.WorkloadTraining, schemas.WorkloadInference, schemas.WorkloadBatchInference, schemas.WorkloadDev}
	var last int64
	for i := range events {
		e := &events[i]
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("event %d (%s %s at %d): %s", i, e.Event, e.Job, e.TimeMs, fmt.Sprintf(format, args...))
		}
		if err := schemas.ValidateJobEvent(e); err != nil {
			fail("%v", err)
		}
		if e.TimeMs < last {
			fail("out of time order (previous %d)", last)
		}
		last = e.TimeMs
		if e.Cluster == "" || e.Source == "" || e.Attempt < 1 {
			fail("missing cluster, source or attempt: %+v", e)
		}
		l := jobs[e.Job]
		switch e.Event {
		case schemas.EventSubmit:
			if l != nil {
				fail("second submit")
			}
			if e.Team == "" || e.Project == "" || e.Queue == "" || e.ModelName == "" || e.GPUs == 0 ||
				!slices.Contains(pools, e.Pool) || !slices.Contains(workloads, e.Workload) {
				fail("incomplete submit: %+v", e)
			}
			prefix := map[string]string{
				schemas.SourceKubernetes: "k8s/" + e.Team + "-",
				schemas.SourceSlurm:      "slurm/" + e.Cluster + "/",
				schemas.SourceProcess:    "proc/gpu-",
			}[e.Source]
			if prefix == "" || !strings.HasPrefix(e.Job, prefix) {
				fail("key does not match source %q", e.Source)
			}
			if (e.Attempt > 1) != (e.RerunOf != "") || (e.RerunOf != "" && !failed[e.RerunOf]) {
				fail("attempt %d reruns %q, which did not fail", e.Attempt, e.RerunOf)
			}
			jobs[e.Job] = &life{submit: e}
		case schemas.EventAdmit:
			if l == nil || l.admit != nil || l.start != nil {
				fail("admit without submit, or twice")
			}
			l.admit = e
		case schemas.EventStart:
			if l == nil || l.admit == nil || l.admit.TimeMs != e.TimeMs || l.start != nil {
				fail("start without submit and admit, or twice")
			}
			if len(e.Nodes) == 0 || len(e.GPUUUIDs) != int(l.submit.GPUs) {
				fail("start on nodes %v with %d GPUs for a %d-GPU request", e.Nodes, len(e.GPUUUIDs), l.submit.GPUs)
			}
			l.start = e
			waits[e.Job] = e.TimeMs - l.submit.TimeMs
		case schemas.EventEnd:
			if l == nil || l.start == nil || l.end != nil || e.TimeMs <= l.start.TimeMs {
				fail("end without start, or twice")
			}
			switch {
			case e.Status == schemas.StatusSucceeded && e.ExitCode != 0,
				e.Status == schemas.StatusFailed && e.ExitCode == 0,
				e.Status == "":
				fail("status %q with exit code %d", e.Status, e.ExitCode)
			}
			if e.Status == schemas.StatusFailed {
				failed[e.Job] = true
			}
			l.end = e
		default:
			fail("unexpected event kind")
		}
	}
	return waits
}

// ticksOf returns the sample indices (into a series) inside [start, end), end
// zero meaning the end of the recording.
func (r *recording) ticksOf(start, end time.Time) (from, to int) {
	startMs := r.f.cfg.Start.UnixMilli()
	from = int((start.UnixMilli()-startMs+r.tickMs-1)/r.tickMs) - 1
	to = r.ticks
	if !end.IsZero() {
		to = int((end.UnixMilli()-startMs+r.tickMs-1)/r.tickMs) - 1
	}
	return max(from, 0), min(to, r.ticks)
}

func median(xs []float32) float32 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func fraction(xs []float32, pred func(float32) bool) float64 {
	k := 0
	for _, x := range xs {
		if pred(x) {
			k++
		}
	}
	return float64(k) / float64(len(xs))
}

// TestSimulatedDay runs the default fleet for a simulated day, the demo's shape,
// and checks the job events, the samples and that the truth matches what the
// samples show.
func TestSimulatedDay(t *testing.T) {
	cfg := testConfig(1)
	const ticks = 8640
	rec := simulate(t, cfg, ticks)
	t.Logf("one day: %d rows, %d job events, %d truth entries, stats %+v", rec.rows, len(rec.events), len(rec.f.Truth()), rec.f.Stats())

	t.Run("events", func(t *testing.T) {
		waits := checkEvents(t, rec.events)
		waited := 0
		for _, w := range waits {
			if w > 0 {
				waited++
			}
		}
		if waited == 0 {
			t.Errorf("no job waited in a queue (%d started)", len(waits))
		}
		st := rec.f.Stats()
		if starts := len(waits); st.JobsRunning+st.JobsEnded != starts {
			t.Errorf("stats: %d running + %d ended, but %d starts", st.JobsRunning, st.JobsEnded, starts)
		}
	})

	t.Run("truth kinds", func(t *testing.T) {
		got := map[schemas.FindingKind]int{}
		for _, tr := range rec.f.Truth() {
			got[tr.Kind]++
		}
		for _, k := range schemas.FindingKinds {
			if realOnly(k) {
				continue // planted only with Config.RealFleet (TestSimulatedRealFleetDay)
			}
			if got[k] == 0 {
				t.Errorf("no %s in a day (%v)", k, got)
			}
		}
		stray := slices.ContainsFunc(rec.f.Truth(), func(tr Truth) bool { return tr.Kind == schemas.KindZombie && tr.Job == "" })
		leaked := slices.ContainsFunc(rec.f.Truth(), func(tr Truth) bool { return tr.Kind == schemas.KindZombie && tr.Job != "" })
		if !stray || !leaked {
			t.Errorf("zombies: stray %v, leaked from a job %v", stray, leaked)
		}
	})

	t.Run("truth matches samples", func(t *testing.T) {
		for _, tr := range rec.f.Truth() {
			if !tr.End.IsZero() && tr.End.Before(tr.Start) {
				t.Errorf("%+v: ends before it starts", tr)
			}
			from, to := rec.ticksOf(tr.Start, tr.End)
			if to-from < 6 {
				continue // too short to judge from samples
			}
			for _, u := range tr.GPUUUIDs {
				s := rec.units[u]
				if s == nil {
					t.Fatalf("%+v: unknown GPU %s", tr, u)
				}
				gr, sm, dram, used := s.gr[from:to], s.sm[from:to], s.dram[from:to], s.usedMiB[from:to]
				var bad string
				switch tr.Kind {
				case schemas.KindIdle:
					if f := fraction(gr, func(x float32) bool { return x > 0.05 }); f > 0.1 || slices.Min(used) < 1000 {
						bad = fmt.Sprintf("active %.0f%% of ticks, min memory %d MiB", 100*f, slices.Min(used))
					}
				case schemas.KindZombie:
					if slices.Max(gr) != 0 || slices.Min(used) < 300 {
						bad = fmt.Sprintf("max gr %v, min memory %d MiB", slices.Max(gr), slices.Min(used))
					}
					k := fmt.Sprintf("%s/%d/%s", tr.Node, tr.PID, tr.Job)
					if len(rec.idleProcs[k]) < to-from {
						bad = fmt.Sprintf("process %s seen idle in %d of %d ticks", k, len(rec.idleProcs[k]), to-from)
					}
				case schemas.KindMemoryBound:
					if median(dram) < 0.6 || median(sm) > 0.35 {
						bad = fmt.Sprintf("median dram %v, sm %v", median(dram), median(sm))
					}
				case schemas.KindWrongCard:
					if !strings.Contains(s.card, "80GB") || slices.Max(used) > 10000 || median(gr) < 0.1 {
						bad = fmt.Sprintf("card %s, max memory %d MiB, median gr %v", s.card, slices.Max(used), median(gr))
					}
				case schemas.KindLowUtil:
					if median(sm) >= 0.2 || median(gr) < 0.1 {
						bad = fmt.Sprintf("median sm %v, gr %v", median(sm), median(gr))
					}
				}
				if bad != "" {
					t.Errorf("%s of %q on %s from %v: %s", tr.Kind, tr.Job, u, tr.Start, bad)
				}
			}
		}
	})

	t.Run("busy jobs are not idle", func(t *testing.T) {
		idleJobs := map[string]bool{}
		for _, tr := range rec.f.Truth() {
			idleJobs[tr.Job] = true
		}
		ends := map[string]time.Time{}
		for _, e := range rec.events {
			if e.Event == schemas.EventEnd {
				ends[e.Job] = time.UnixMilli(e.TimeMs)
			}
		}
		checked := 0
		for _, e := range rec.events {
			if e.Event != schemas.EventStart || idleJobs[e.Job] {
				continue
			}
			from, to := rec.ticksOf(time.UnixMilli(e.TimeMs), ends[e.Job])
			if to-from < 360 {
				continue
			}
			checked++
			for _, u := range e.GPUUUIDs {
				gr := rec.units[u].gr[from:to]
				if f := fraction(gr, func(x float32) bool { return x < 0.01 }); f > 0.2 {
					t.Errorf("job %s on %s: engine idle %.0f%% of %d ticks but no truth says so", e.Job, u, 100*f, to-from)
				}
			}
		}
		if checked == 0 {
			t.Error("no job ran an hour")
		}
	})

	t.Run("load", func(t *testing.T) {
		held, total := 0, 0
		for _, s := range rec.units {
			for _, u := range s.usedMiB {
				if u > 500 {
					held++
				}
			}
			total += len(s.usedMiB)
		}
		if f := float64(held) / float64(total); f < 0.5 || f > 0.95 {
			t.Errorf("GPU units holding memory %.2f of the time, want about the load %.2f", f, cfg.Load)
		}
	})
}

// realOnly reports whether only Config.RealFleet plants kind k.
func realOnly(k schemas.FindingKind) bool {
	return k == schemas.KindHung || k == schemas.KindMemoryCapacity
}

// TestSimulatedRealFleetDay runs a day of the real-fleet patterns and checks each
// is planted and shows in the samples as the truth says: every kind in the truth;
// hung jobs' GPUs flat (SM low, no DRAM) with memory held; memory-full servers
// at most of their memory and little SM; GPUs shared by two running jobs at once;
// zombies whose GPU went to a new job; small jobs busy only in bursts.
func TestSimulatedRealFleetDay(t *testing.T) {
	cfg := testConfig(1)
	cfg.RealFleet = true
	rec := simulate(t, cfg, 8640)
	got := map[schemas.FindingKind]int{}
	for _, tr := range rec.f.Truth() {
		got[tr.Kind]++
	}
	for _, k := range schemas.FindingKinds {
		if got[k] == 0 {
			t.Errorf("no %s in a day (%v)", k, got)
		}
	}
	bursty := 0
	for _, tr := range rec.f.Truth() {
		from, to := rec.ticksOf(tr.Start, tr.End)
		if to-from < 6 {
			continue
		}
		for _, u := range tr.GPUUUIDs {
			s := rec.units[u]
			sm, dram, used := s.sm[from:to], s.dram[from:to], s.usedMiB[from:to]
			switch tr.Kind {
			case schemas.KindHung:
				if median(sm) > 0.1 || slices.Max(dram) > 0.01 || slices.Min(used) < 1000 {
					t.Errorf("hung %s on %s: median sm %v, max dram %v, min memory %d", tr.Job, u, median(sm), slices.Max(dram), slices.Min(used))
				}
			case schemas.KindMemoryCapacity:
				if float64(slices.Min(used)) < 0.8*float64(s.totalMiB) || median(sm) > 0.1 {
					t.Errorf("memory-full %s on %s: min memory %d of %d, median sm %v", tr.Job, u, slices.Min(used), s.totalMiB, median(sm))
				}
			case schemas.KindWrongCard:
				if f := fraction(s.gr[from:to], func(x float32) bool { return x < 0.01 }); f > 0.3 {
					bursty++
				}
			}
		}
	}
	if bursty == 0 {
		t.Error("no small job on a big card busy only in bursts")
	}
	// Running jobs per GPU over time, from the job events.
	type span struct {
		job      string
		from, to int64
	}
	byGPU := map[string][]span{}
	starts := map[string]schemas.JobEvent{}
	for _, e := range rec.events {
		switch e.Event {
		case schemas.EventStart:
			starts[e.Job] = e
		case schemas.EventEnd:
			for _, u := range starts[e.Job].GPUUUIDs {
				byGPU[u] = append(byGPU[u], span{e.Job, starts[e.Job].TimeMs, e.TimeMs})
			}
			delete(starts, e.Job)
		}
	}
	for _, st := range starts {
		for _, u := range st.GPUUUIDs {
			byGPU[u] = append(byGPU[u], span{st.Job, st.TimeMs, 1 << 62})
		}
	}
	shared := 0
	for _, spans := range byGPU {
		for i := range spans {
			for k := i + 1; k < len(spans); k++ {
				if spans[i].from < spans[k].to && spans[k].from < spans[i].to {
					shared++
				}
			}
		}
	}
	if shared == 0 {
		t.Error("no GPU ran two jobs at once (time-slicing)")
	}
	underNew := 0
	for _, tr := range rec.f.Truth() {
		if tr.Kind != schemas.KindZombie || tr.Job == "" {
			continue
		}
		end := tr.End.UnixMilli()
		if tr.End.IsZero() {
			end = 1 << 62
		}
		for _, sp := range byGPU[tr.GPUUUIDs[0]] {
			if sp.job != tr.Job && sp.from < end && sp.to > tr.Start.UnixMilli() {
				underNew++
				break
			}
		}
	}
	if underNew == 0 {
		t.Error("no zombie's GPU went to a new job")
	}
	t.Logf("truth %v; %d overlapping tenancies, %d zombies under a new job, %d bursty small jobs", got, shared, underNew, bursty)
}
