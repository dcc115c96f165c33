package findings

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store"
)

// TestSharedStatsMatchOneQueryEach checks that the one query answering every hint
// request of a pass (several windows, activity thresholds, memory-bound pairs and
// pool groups) gives each request exactly what a query of its own gives: the
// same jobs, the same counts, quantiles and spans. Each request is also asked
// with no condition, so the comparison covers every job judged, not only the
// few a detector's condition keeps.
func TestSharedStatsMatchOneQueryEach(t *testing.T) {
	fx := newFixture(t)
	ctx := t.Context()
	now := fx.at(3 * time.Hour)
	// 48 GPUs on 6 nodes sampled every 5 s for 3 h; activity, DRAM, tensor and
	// memory vary by GPU and over time, so medians, active shares and memory-bound
	// shares differ between the last hour and the two before it. GPUs 40–43 start
	// sampling 70 minutes before now (they span the hour, not two), 44–47 stop
	// 20 minutes before it.
	samples := `
INSERT INTO gpu_samples (ts, cluster, node, gpu_uuid, gpu_index, model, card, mig_profile, fb_total_mib, fb_used_mib,
    gr_engine_active, sm_active, sm_occupancy, tensor_active, dram_active, gpu_util, pcie_tx_bytes_per_s, pcie_rx_bytes_per_s,
    power_w, energy_mj, temp_c, xid, clock_event_reasons)
SELECT ts, 'c1', concat('n', toString(intDiv(g, 8))), concat('GPU-', toString(g)), g % 8,
       'NVIDIA H100 80GB HBM3', if(g < 24, 'H100-80GB', 'L40S-48GB'), '', if(g < 24, 81559, 46068) AS total,
       toUInt32(total * (0.1 + 0.85 * h3)),
       if(h1 < 0.15, 0.02, h1) AS gr, gr * (0.3 + 0.7 * h2), gr / 2, gr * h3, if(g % 3 = 0, 0.7 + 0.3 * h2, 0.2 * h3), gr,
       1e6, 1e6, 300, 1e9 + toUInt64(s) * 1000, 50, 0, 0
FROM (
    SELECT number % 48 AS g, intDiv(number, 48) * 5 AS s, {t0:DateTime64(3, 'UTC')} + toIntervalSecond(s) AS ts,
           (cityHash64(g, intDiv(s, 300 + 60 * (g % 5))) % 1000) / 1000 AS h1,
           (cityHash64(g, s, 1) % 1000) / 1000 AS h2,
           (cityHash64(g, intDiv(s, 1200)) % 1000) / 1000 AS h3
    FROM numbers(48 * 2160)
)
WHERE NOT (g BETWEEN 40 AND 43 AND s < 10800 - 4200) AND NOT (g >= 44 AND s > 10800 - 1200)`
	if err := fx.s.Exec(ctx, samples, store.Params{"t0": tsParam(fx.t0)}); err != nil {
		t.Fatal(err)
	}
	pools := []string{"dev", "training-exp", "inference-online", "inference-batch"}
	for k := 0; k < 48; {
		n := []int{1, 2, 4, 1, 8, 2}[k%6]
		n = min(n, 8-k%8, 48-k)
		var gpus []string
		for i := range n {
			gpus = append(gpus, "GPU-"+strconv.Itoa(k+i))
		}
		fx.job("job-"+strconv.Itoa(k), "team", pools[k%len(pools)], "n"+strconv.Itoa(k/8), gpus, fx.at(-time.Hour), time.Time{})
		k += n
	}
	fx.flush()
	cfg := DefaultConfig()
	dev := cfg.ForPool(PoolDev)
	dev.LowUtil.Window, dev.LowUtil.MinRuntime, dev.LowUtil.ActiveThreshold = 90*time.Minute, 90*time.Minute, 0.3
	dev.MemoryBound.MinDRAMP50, dev.MemoryBound.MaxSMP50 = 0.5, 0.5
	cfg.Pools["dev"] = dev
	inf := cfg.ForPool(PoolInferenceOnline)
	inf.WrongCard.Window, inf.WrongCard.ActiveThreshold = 30*time.Minute, 0.2
	cfg.Pools["inference-online"] = inf
	a := fx.analyzer(cfg, nil)
	ps := newPass(now, nil, a.log)
	var err error
	if ps.running, err = a.loadRunning(ctx, now); err != nil {
		t.Fatal(err)
	}
	var reqs []statsReq
	for _, h := range hintKinds {
		for _, r := range h.reqs(a, ps) {
			all := r
			all.condition = "1 = 1"
			reqs = append(reqs, r, all)
		}
	}
	windows, acts := map[time.Duration]bool{}, map[string]bool{}
	for _, r := range reqs {
		windows[r.window], acts[r.params["active"]] = true, true
	}
	if len(windows) < 3 || len(acts) < 4 {
		t.Fatalf("the requests cover %d windows and %d thresholds; the test needs several of each", len(windows), len(acts))
	}
	shared, err := queryJobStats(ctx, a, ps, reqs)
	if err != nil {
		t.Fatal(err)
	}
	judged := 0
	for i, r := range reqs {
		alone, err := queryJobStats(ctx, a, ps, []statsReq{r})
		if err != nil {
			t.Fatal(err)
		}
		got, want := describeStats(shared[i]), describeStats(alone[0])
		if got != want {
			t.Errorf("request %d (window %v, condition %.40q): shared query\n%s\nits own query\n%s", i, r.window, r.condition, got, want)
		}
		judged += len(alone[0])
	}
	if judged < 40 {
		t.Fatalf("only %d jobs judged over every request: the data does not exercise the query", judged)
	}
}

// describeStats prints stats for comparison (NaN equal to NaN).
func describeStats(stats []jobStats) string {
	var b strings.Builder
	for _, s := range stats {
		fmt.Fprintf(&b, "%s %s %s %v %v n=%d act=%.6g sm=%.6g busy=%.6g mem=%.6g dram=%.6g tensor=%.6g mb=%.6g peak=%g total=%g\n",
			s.j.job, s.node, s.card, s.gpus, s.migProfiles, s.samples, s.activeFraction, s.smQ, s.smActiveQ,
			s.memP10Fraction, s.dramP50, s.tensorP50, s.mbSustained, s.peakMemMiB, s.fbTotalMiB)
	}
	return b.String()
}
