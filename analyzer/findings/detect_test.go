package findings

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

const tick = 10 * time.Second

// hardCases loads one store with every hard case the detectors must get right and
// returns the pass time.
func hardCases(fx *fixture) time.Time {
	now := fx.at(3 * time.Hour)
	t0 := fx.t0
	busy := func(mem uint32, pid uint32, job string) sampleFunc {
		return func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
			set(s, 0.95, 0.8, 0.5, 0.5, 2e9, mem)
			return proc(pid, job, mem, 0.8)
		}
	}
	// An idle notebook: busy for an hour, then idle holding memory, with a one-tick
	// spike (someone runs a cell) every 20 minutes.
	fx.job("nb-spiky", "research", PoolDev, "n1", []string{"GPU-A"}, t0, time.Time{})
	fx.series("n1", h100("GPU-A"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		switch {
		case el < time.Hour:
			set(s, 0.5, 0.3, 0.1, 0.2, 100e6, 8000)
			return proc(101, "nb-spiky", 8000, 0.3)
		case el%(20*time.Minute) < tick:
			set(s, 0.5, 0.3, 0.05, 0.1, 20e6, 8000)
			return proc(101, "nb-spiky", 8000, 0.3)
		}
		set(s, 0, 0, 0, 0, 10e3, 8000)
		return proc(101, "nb-spiky", 8000, 0)
	})
	// A training job loading data for 45 minutes: engine nearly idle, PCIe busy.
	fx.job("train-load", "nlp", PoolTrainingExp, "n1", []string{"GPU-B"}, now.Add(-45*time.Minute), time.Time{})
	fx.series("n1", h100("GPU-B"), now.Add(-45*time.Minute), now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0.02, 0.01, 0, 0.03, 4e9, uint32(8000+el.Minutes()*1000))
		return proc(102, "train-load", s.FBUsedMiB, 0.01)
	})
	// An online service at night: a few % engine activity and a trickle of requests.
	fx.job("online-night", "speech", PoolInferenceOnline, "n2", []string{"GPU-C"}, t0, time.Time{})
	fx.series("n2", l40s("GPU-C"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		gr := float32(0.025 + 0.01*math.Sin(el.Minutes()))
		set(s, gr, gr*0.75, gr/2, 0.04, 8e6, 20000)
		return proc(103, "online-night", 20000, gr*0.75)
	})
	// An online service nobody calls any more: idle by its pool's policy.
	fx.job("online-dead", "speech", PoolInferenceOnline, "n2", []string{"GPU-D"}, t0, time.Time{})
	fx.series("n2", l40s("GPU-D"), t0, now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0, 0, 0, 0, 2e3, 20000)
		return proc(104, "online-dead", 20000, 0)
	})
	// A dev job below the activity threshold but moving data all the time.
	fx.job("dev-bursty", "vision", PoolDev, "n2", []string{"GPU-E"}, t0, time.Time{})
	fx.series("n2", l40s("GPU-E"), t0, now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0.02, 0.01, 0, 0.01, 8e6, 6000)
		return proc(105, "dev-bursty", 6000, 0.01)
	})
	// A job that ended 20 minutes ago but left its process holding memory.
	end := now.Add(-20 * time.Minute)
	fx.job("ended-job", "nlp", PoolTrainingExp, "n3", []string{"GPU-F"}, t0, end)
	fx.series("n3", h100("GPU-F"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		if t0.Add(el).Before(end) {
			return busy(60000, 200, "ended-job")(el, s)
		}
		set(s, 0, 0, 0, 0, 1e3, 6000)
		return proc(200, "ended-job", 6000, 0)
	})
	// A job that ended 3 minutes ago and whose process is still tearing down.
	end2 := now.Add(-3 * time.Minute)
	fx.job("teardown-job", "nlp", PoolTrainingExp, "n3", []string{"GPU-G"}, t0, end2)
	fx.series("n3", h100("GPU-G"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		if t0.Add(el).Before(end2) {
			return busy(60000, 201, "teardown-job")(el, s)
		}
		set(s, 0, 0, 0, 0, 1e3, 60000)
		return proc(201, "teardown-job", 60000, 0)
	})
	// A stray process nobody can attribute, and one whose job key no scheduler knows.
	fx.series("n3", h100("GPU-H"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		if t0.Add(el).Before(now.Add(-15 * time.Minute)) {
			set(s, 0, 0, 0, 0, 1e3, 2)
			return nil
		}
		set(s, 0, 0, 0, 0, 1e3, 2000)
		return proc(300, "", 2000, 0)
	})
	fx.series("n3", h100("GPU-I"), now.Add(-time.Hour), now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0, 0, 0, 0, 1e3, 3000)
		return proc(400, "k8s/ghost/0000", 3000, 0)
	})
	// MIG: an idle notebook on one instance beside a busy batch job on the next.
	fx.job("mig-nb", "research", PoolDev, "n4", []string{"MIG-a"}, t0, time.Time{})
	fx.series("n4", mig1("MIG-a"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		if el < 30*time.Minute {
			set(s, 0.4, 0.3, 0.1, 0.2, 50e6, 5000)
			return proc(500, "mig-nb", 5000, 0.3)
		}
		set(s, 0, 0, 0, 0, 5e3, 5000)
		return proc(500, "mig-nb", 5000, 0)
	})
	fx.job("mig-batch", "speech", PoolInferenceBatch, "n4", []string{"MIG-b"}, t0, time.Time{})
	fx.series("n4", mig1("MIG-b"), t0, now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0.6, 0.5, 0.3, 0.4, 300e6, 7000)
		return proc(501, "mig-batch", 7000, 0.5)
	})
	// Memory-bound, wrong card and low utilisation.
	fx.job("mb-job", "recsys", PoolTrainingExp, "n5", []string{"GPU-J"}, t0, time.Time{})
	fx.series("n5", h100("GPU-J"), t0, now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0.7, 0.2, 0.01, 0.8, 1e9, 60000)
		return proc(600, "mb-job", 60000, 0.2)
	})
	fx.job("small-job", "vision", PoolDev, "n5", []string{"GPU-K"}, t0, time.Time{})
	fx.series("n5", h100("GPU-K"), t0, now, tick, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		mem := uint32(4000 + 1000*(int(el.Minutes())%2))
		set(s, 0.3, 0.1, 0.03, 0.1, 50e6, mem)
		return proc(601, "small-job", mem, 0.1)
	})
	fx.job("low-job", "research", PoolTrainingExp, "n6", []string{"GPU-L"}, t0, time.Time{})
	fx.series("n6", l40s("GPU-L"), t0, now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0.3, 0.1, 0.05, 0.1, 100e6, 20000)
		return proc(602, "low-job", 20000, 0.1)
	})
	// An NVML-only node: no profiling fields, only gpu_util.
	fx.job("nvml-idle", "vision", PoolDev, "n7", []string{"GPU-M"}, t0, time.Time{})
	fx.series("n7", h100("GPU-M"), t0, now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		s.GPUUtil, s.PCIeRxBytesPerS, s.PCIeTxBytesPerS, s.FBUsedMiB = 0, 1e3, 1e3, 3000
		return []schemas.ProcessSample{{PID: 700, ProcessName: "python3", Job: "nvml-idle", FBUsedMiB: 3000, SMUtil: schemas.Missing, MemUtil: schemas.Missing}}
	})
	// A busy training job, and a forgotten job in a pool whose idle detector is off:
	// only the zombie detector's long inactivity rule catches it.
	fx.job("train-busy", "nlp", PoolTrainingProd, "n8", []string{"GPU-N"}, t0, time.Time{})
	fx.series("n8", h100("GPU-N"), t0, now, tick, busy(70000, 800, "train-busy"))
	fx.job("forgotten", "nlp", "sandbox", "n8", []string{"GPU-O"}, t0, time.Time{})
	fx.series("n8", l40s("GPU-O"), t0, now, tick, func(_ time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0, 0, 0, 0, 1e3, 3000)
		return proc(801, "forgotten", 3000, 0)
	})
	fx.flush()
	return now
}

// hardCaseConfig is the default config with a sandbox pool whose idle detector is off.
func hardCaseConfig() Config {
	cfg := DefaultConfig()
	sb := cfg.Defaults
	sb.Idle.Enabled = false
	cfg.Pools["sandbox"] = sb
	return cfg
}

func TestDetectorsHardCases(t *testing.T) {
	fx := newFixture(t)
	now := hardCases(fx)
	bus := &fakeBus{}
	a := fx.analyzer(hardCaseConfig(), bus)
	res, err := a.Run(t.Context(), now)
	if err != nil {
		t.Fatal(err)
	}
	got := byKind(res.Opened)
	want := map[schemas.FindingKind][]string{
		schemas.KindIdle:        {"mig-nb", "nb-spiky", "nvml-idle", "online-dead"},
		schemas.KindZombie:      {"n3/200", "n3/300", "n3/400", "n8/801"},
		schemas.KindMemoryBound: {"mb-job"},
		schemas.KindWrongCard:   {"small-job"},
		schemas.KindLowUtil:     {"low-job"},
		// A busy training job: compute, not bandwidth, is its limit.
		schemas.KindComputeBound: {"train-busy"},
	}
	for _, k := range schemas.FindingKinds {
		var keys []string
		for key := range got[k] {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, want[k]) {
			t.Errorf("%s: got %v, want %v", k, keys, want[k])
		}
	}
	if len(res.Updated)+len(res.Resolved) != 0 || len(res.Failed) != 0 {
		t.Errorf("first pass: %d updated, %d resolved, failed %v", len(res.Updated), len(res.Resolved), res.Failed)
	}

	t.Run("evidence", func(t *testing.T) {
		nb := got[schemas.KindIdle]["nb-spiky"]
		ev := nb.Evidence
		if ev["window_minutes"] != 30 || ev["samples"] < 170 || ev["active_fraction"] <= 0 || ev["active_fraction"] > 0.05 {
			t.Errorf("idle evidence %v: want a 30 min window of ~180 samples with the spike counted but under 5%%", ev)
		}
		if nb.Team != "research" || nb.Project != "research-proj" || nb.Pool != PoolDev || nb.Node != "n1" || nb.Card != "H100-80GB" ||
			!slices.Equal(nb.GPUUUIDs, []string{"GPU-A"}) || nb.Severity != schemas.SeverityWarning || nb.State != schemas.StateOpen || nb.Episode != 1 {
			t.Errorf("idle finding %+v", nb)
		}
		// Waste counts from the start of the window that proved it: 30 min of one H100.
		if math.Abs(nb.WasteGPUHours-0.5) > 1e-6 || math.Abs(nb.WasteCost-2.0) > 1e-6 || nb.Currency != "USD" {
			t.Errorf("idle waste %g GPU-h, %g %s; want 0.5 GPU-h, 2 USD", nb.WasteGPUHours, nb.WasteCost, nb.Currency)
		}
		if mig := got[schemas.KindIdle]["mig-nb"]; math.Abs(mig.Evidence["gpus"]-0.143) > 0.001 || math.Abs(mig.WasteGPUHours-0.5/7) > 0.001 {
			t.Errorf("MIG idle counts %v GPUs, %g GPU-h; want 1/7 of a GPU", mig.Evidence["gpus"], mig.WasteGPUHours)
		}
		if got[schemas.KindIdle]["online-dead"].Evidence["window_minutes"] != 120 {
			t.Errorf("online service judged over %v min, want its pool's 120", got[schemas.KindIdle]["online-dead"].Evidence["window_minutes"])
		}
		z := got[schemas.KindZombie]["n3/200"]
		if z.Job != "ended-job" || z.Team != "nlp" || z.Evidence["job_ended"] != 1 || z.Evidence["mem_used_mib"] != 6000 ||
			math.Abs(z.Evidence["minutes_since_job_end"]-20) > 0.01 || !z.Since.Equal(now.Add(-20*time.Minute)) {
			t.Errorf("zombie of ended job: %+v", z)
		}
		if s := got[schemas.KindZombie]["n3/300"]; s.Job != "" || s.Evidence["job_known"] != 0 || !strings.Contains(s.Recommendation, "no job") {
			t.Errorf("stray zombie: %+v", s)
		}
		wc := got[schemas.KindWrongCard]["small-job"]
		if wc.Recommended != "MIG 1g.10gb of H100-80GB" || math.Abs(wc.Evidence["savings_per_day"]-(4-4.0/7)*24) > 0.1 ||
			wc.Evidence["peak_mem_mib"] != 5000 || !strings.Contains(wc.Recommendation, "USD/month") {
			t.Errorf("wrong card: recommended %q, evidence %v, %q", wc.Recommended, wc.Evidence, wc.Recommendation)
		}
		lu := got[schemas.KindLowUtil]["low-job"].Evidence
		// Quantiles are BFloat16 histograms: within 0.4 % of the value.
		near := func(x, want float64) bool { return math.Abs(x-want) <= 0.004*want+0.001 }
		if !near(lu["sm_active_p50"], 0.1) || !near(lu["sm_active_p10"], 0.1) || !near(lu["sm_active_p90"], 0.1) || lu["window_minutes"] != 120 {
			t.Errorf("low_util evidence %v", lu)
		}
		// A hint's waste is what a job fed to SM 50 % would have saved: 1 h × (1 − 0.2 / 0.5), priced.
		if mb := got[schemas.KindMemoryBound]["mb-job"]; mb.Severity != schemas.SeverityInfo || math.Abs(mb.WasteGPUHours-0.6) > 0.01 ||
			mb.Currency != "USD" || math.Abs(mb.WasteCost-4*mb.WasteGPUHours) > 0.01 || !near(mb.Evidence["dram_active_p50"], 0.8) {
			t.Errorf("memory_bound %+v", mb)
		}
	})

	t.Run("published", func(t *testing.T) {
		msgs := bus.take()
		if len(msgs) != len(res.Opened) {
			t.Fatalf("published %d messages for %d opened findings", len(msgs), len(res.Opened))
		}
		for _, m := range msgs {
			var v map[string]any
			if err := json.Unmarshal(m.data, &v); err != nil {
				t.Fatal(err)
			}
			for _, field := range []string{"kind", "job", "team", "node", "gpu_uuid", "pid", "first_seen", "last_seen", "evidence", "waste_gpu_hours", "waste_cost"} {
				if _, ok := v[field]; !ok {
					t.Errorf("message on %s has no %q: %s", m.subject, field, m.data)
				}
			}
			if m.subject != "gpupool.findings."+v["kind"].(string) || v["event"] != string(schemas.EventOpened) {
				t.Errorf("message on %s: kind %v, event %v", m.subject, v["kind"], v["event"])
			}
		}
	})

	t.Run("findings_open view", func(t *testing.T) {
		r, err := fx.s.Query(t.Context(), "SELECT kind, count() AS n, sum(waste_gpu_hours) AS h, sum(gpus) AS g FROM findings_open GROUP BY kind ORDER BY kind", nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i := range r.Rows {
			c, _ := r.Int(i, "n")
			n += int(c)
		}
		if n != len(res.Opened) {
			t.Errorf("findings_open has %d rows, want %d: %v", n, len(res.Opened), r.Rows)
		}
	})
}
