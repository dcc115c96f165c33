package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/gpupool/gpupool/store"
)

// The queries both stores answer on the same trace, each timed as the median of
// queryReps runs after one warm-up; their answers are compared (answer), so a
// faster one is a right one.
const queryReps = 5

// answer is a query's result as key → value, compared between the stores.
type answer map[string]float64

// queryTimes is each query's time and answer, by name.
type queryTimes map[string]timedAnswer

type timedAnswer struct {
	took time.Duration
	ans  answer
}

// query is one question both stores answer: what each reads to answer it (the
// table says), and the PromQL a Prometheus user would write for it
// (docs/measurements.md; the benchmark reads the TSDB's series in Go, the floor
// under PromQL's own time: no parsing, no evaluation per step).
type query struct {
	name, prom, ours, promQL string
}

// queries are the questions, in the table's order.
var queries = []query{
	{"GPU-hours per job over the hour", "raw series", "process_minute (the rollup ingest writes)",
		`sum by (job) (count_over_time((count by (job, UUID) (gpupool_process_fb_used_mib{job!=""}))[1h:10s])) * 10 / 3600`},
	{"GPU-hours per team per day", "raw series", "process_minute",
		`sum by (namespace) (label_replace(count_over_time((count by (job, UUID) (gpupool_process_fb_used_mib{job!=""}))[1d:10s]), ...)) * 10 / 3600`},
	{"a job's timeline (its GPUs' SM activity and memory per minute; the Jobs page's)", "raw series", "gpu_minute, process_minute",
		`avg_over_time(DCGM_FI_PROF_SM_ACTIVE[1m]) and max_over_time(DCGM_FI_DEV_FB_USED[1m]), each * on (UUID) group_left count by (UUID) (gpupool_process_fb_used_mib{job="J"}), step 1m`},
	{"fleet utilisation now (latest per GPU, averaged)", "raw series", "gpu_samples (the raw table)",
		`avg(DCGM_FI_DEV_GPU_UTIL) and count(DCGM_FI_DEV_GPU_UTIL), instant`},
	{"Fleet page: each GPU now (activity and power over its 5 whole minutes, most memory in the latest)", "raw series", "gpu_state_minute (the per-minute rollup of the last hours ingest writes)",
		`avg_over_time((DCGM_FI_PROF_SM_ACTIVE or DCGM_FI_PROF_GR_ENGINE_ACTIVE or DCGM_FI_DEV_GPU_UTIL)[5m]), avg_over_time(DCGM_FI_DEV_POWER_USAGE[5m]), max_over_time(DCGM_FI_DEV_FB_USED[1m]), at a minute's end`},
	{"Fleet page: each GPU's hourly SM activity (sparklines)", "raw series", "gpu_hour (the rollup ingest writes)",
		`avg_over_time(DCGM_FI_PROF_SM_ACTIVE[1h]), step 1h`},
	{"analyzer: each GPU's active share over the hour (idle detection)", "raw series", "gpu_hour",
		`count_over_time(((DCGM_FI_PROF_GR_ENGINE_ACTIVE or DCGM_FI_DEV_GPU_UTIL) >= 0.01 or DCGM_FI_PROF_DRAM_ACTIVE >= 0.01 or (PCIE_TX + PCIE_RX) >= 1e8)[1h:10s]) / count_over_time(...[1h:10s])`},
}

// queryNames are the queries' names, in the table's order.
var queryNames = func() []string {
	var ns []string
	for _, q := range queries {
		ns = append(ns, q.name)
	}
	return ns
}()

// team is a job key's namespace ("k8s/<team>-<project>/<id>": "<team>-<project>"),
// the tenant both stores group by; "" for a key without one.
func team(job string) string {
	p := strings.Split(job, "/")
	if len(p) < 2 {
		return ""
	}
	return p[1]
}

// timed runs q once to warm up, then queryReps times, and keeps the median time
// and the last answer.
func timed(q func() (answer, error)) (timedAnswer, error) {
	if _, err := q(); err != nil {
		return timedAnswer{}, err
	}
	var ts []time.Duration
	var a answer
	for range queryReps {
		t0 := time.Now()
		var err error
		if a, err = q(); err != nil {
			return timedAnswer{}, err
		}
		ts = append(ts, time.Since(t0))
	}
	slices.Sort(ts)
	return timedAnswer{took: ts[len(ts)/2], ans: a}, nil
}

// promEach calls f with every sample in [mint, maxt] of the series matching ms.
func promEach(db *tsdb.DB, mint, maxt int64, f func(l labels.Labels, ts int64, v float64), ms ...*labels.Matcher) error {
	qr, err := db.Querier(mint, maxt)
	if err != nil {
		return err
	}
	defer qr.Close()
	ss := qr.Select(context.Background(), false, nil, ms...)
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		l := s.Labels()
		it = s.Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			if ts, v := it.At(); ts >= mint && ts <= maxt {
				f(l, ts, v)
			}
		}
	}
	return ss.Err()
}

func named(name string) *labels.Matcher {
	return labels.MustNewMatcher(labels.MatchEqual, "__name__", name)
}

// promQueries answers the queries from the TSDB: job is the job whose timeline is
// asked for, end the trace's last sample time (ms).
func promQueries(db *tsdb.DB, tick time.Duration, job string, end int64) (queryTimes, error) {
	qs := []func() (answer, error){
		func() (answer, error) {
			return promGPUHours(db, tick, func(job string, _ int64) string { return job + " h" })
		},
		func() (answer, error) {
			return promGPUHours(db, tick, func(job string, ts int64) string {
				return team(job) + "|" + time.UnixMilli(ts).UTC().Format(time.DateOnly) + " h"
			})
		},
		func() (answer, error) { return promTimeline(db, job) },
		func() (answer, error) { return promUtilNow(db, end) },
		func() (answer, error) { return promFleetNow(db, end) },
		func() (answer, error) { return promFleetHourly(db) },
		func() (answer, error) { return promActiveShare(db) },
	}
	out := queryTimes{}
	for i, n := range queryNames {
		ta, err := timed(qs[i])
		if err != nil {
			return nil, fmt.Errorf("prometheus %s: %w", n, err)
		}
		out[n] = ta
	}
	return out, nil
}

// promGPUHours sums, per key of (job, sample time), each job's distinct (GPU,
// tick) pairs from the process memory series, in GPU-hours.
func promGPUHours(db *tsdb.DB, tick time.Duration, key func(job string, ts int64) string) (answer, error) {
	type jobGPU struct{ job, gpu string }
	seen := map[jobGPU]map[int64]struct{}{}
	err := promEach(db, math.MinInt64, math.MaxInt64, func(l labels.Labels, ts int64, _ float64) {
		k := jobGPU{l.Get("job"), l.Get("UUID")}
		if seen[k] == nil {
			seen[k] = map[int64]struct{}{}
		}
		seen[k][ts] = struct{}{}
	}, named(procSeries[0]), labels.MustNewMatcher(labels.MatchNotEqual, "job", ""))
	if err != nil {
		return nil, err
	}
	a := answer{}
	for k, tss := range seen {
		for ts := range tss {
			a[key(k.job, ts)] += tick.Hours()
		}
	}
	return a, nil
}

// promTimeline is the job's GPUs (those its processes were seen on) per minute:
// mean SM activity (-1: none reported) and largest memory used.
func promTimeline(db *tsdb.DB, job string) (answer, error) {
	gpus := map[string]bool{}
	err := promEach(db, math.MinInt64, math.MaxInt64, func(l labels.Labels, _ int64, _ float64) {
		gpus[l.Get("UUID")] = true
	}, named(procSeries[0]), labels.MustNewMatcher(labels.MatchEqual, "job", job))
	if err != nil || len(gpus) == 0 {
		return nil, err
	}
	uuids := slices.Sorted(func(yield func(string) bool) {
		for g := range gpus {
			if !yield(g) {
				return
			}
		}
	})
	re := labels.MustNewMatcher(labels.MatchRegexp, "UUID", strings.Join(uuids, "|"))
	key := func(l labels.Labels, ts int64) string { return fmt.Sprintf("%s|%d", l.Get("UUID"), ts/60_000*60_000) }
	sum, n, fb := map[string]float64{}, map[string]int{}, map[string]float64{}
	if err := promEach(db, math.MinInt64, math.MaxInt64, func(l labels.Labels, ts int64, v float64) {
		k := key(l, ts)
		fb[k] = max(fb[k], v)
	}, named("DCGM_FI_DEV_FB_USED"), re); err != nil {
		return nil, err
	}
	if err := promEach(db, math.MinInt64, math.MaxInt64, func(l labels.Labels, ts int64, v float64) {
		k := key(l, ts)
		sum[k] += v
		n[k]++
	}, named("DCGM_FI_PROF_SM_ACTIVE"), re); err != nil {
		return nil, err
	}
	a := answer{}
	for k, v := range fb {
		a[k+" fb"], a[k+" sm"] = v, -1
		if n[k] > 0 {
			a[k+" sm"] = sum[k] / float64(n[k])
		}
	}
	return a, nil
}

// latest is each series' latest sample in (end-5 min, end], by GPU, as an instant
// query at end sees it.
func latest(db *tsdb.DB, name string, end int64) (map[string]float64, error) {
	last, at := map[string]float64{}, map[string]int64{}
	err := promEach(db, end-5*60_000+1, end, func(l labels.Labels, ts int64, v float64) {
		g := l.Get("UUID")
		if t, ok := at[g]; !ok || ts > t {
			last[g], at[g] = v, ts
		}
	}, named(name))
	return last, err
}

// promUtilNow is the fleet's GPU utilisation at end as an instant query sees it:
// each GPU's latest sample within the 5 minutes before, averaged.
func promUtilNow(db *tsdb.DB, end int64) (answer, error) {
	last, err := latest(db, "DCGM_FI_DEV_GPU_UTIL", end)
	if err != nil {
		return nil, err
	}
	var sum float64
	for _, v := range last {
		sum += v
	}
	return answer{"gpus": float64(len(last)), "util": sum / float64(len(last))}, nil
}

// meanOver is each GPU's mean of the series name over [mint, maxt].
func meanOver(db *tsdb.DB, name string, mint, maxt int64) (map[string]float64, error) {
	sum, n := map[string]float64{}, map[string]int{}
	err := promEach(db, mint, maxt, func(l labels.Labels, _ int64, v float64) {
		g := l.Get("UUID")
		sum[g] += v
		n[g]++
	}, named(name))
	for g := range sum {
		sum[g] /= float64(n[g])
	}
	return sum, err
}

// fleetWindow is the Fleet page's window at end: the five whole minutes up to
// the minute end falls in, [from, to) in ms, as the console asks it.
func fleetWindow(end int64) (from, to int64) {
	to = (end/60_000 + 1) * 60_000
	return to - 5*60_000, to
}

// promFleetNow is the Fleet page's table: each GPU's mean activity (SM
// activity, else graphics engine activity, else utilisation, sample by sample)
// and power over the window (-1: none), and the most memory used in its latest
// minute with samples.
func promFleetNow(db *tsdb.DB, end int64) (answer, error) {
	from, to := fleetWindow(end)
	acts, err := promTicks(db, from, to-1, "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL")
	if err != nil {
		return nil, err
	}
	actSum, actN := map[string]float64{}, map[string]int{}
	for k, v := range acts {
		for _, x := range v {
			if !math.IsNaN(x) {
				actSum[k.gpu] += x
				actN[k.gpu]++
				break
			}
		}
	}
	pw, err := meanOver(db, "DCGM_FI_DEV_POWER_USAGE", from, to-1)
	if err != nil {
		return nil, err
	}
	fb, minute := map[string]float64{}, map[string]int64{}
	err = promEach(db, from, to-1, func(l labels.Labels, ts int64, v float64) {
		g, m := l.Get("UUID"), ts/60_000
		if mm, ok := minute[g]; !ok || m > mm || m == mm && v > fb[g] {
			fb[g], minute[g] = v, m
		}
	}, named("DCGM_FI_DEV_FB_USED"))
	if err != nil {
		return nil, err
	}
	a := answer{}
	for g, v := range fb {
		a[g+" fb"], a[g+" sm"], a[g+" power"] = v, -1, -1
		if n := actN[g]; n > 0 {
			a[g+" sm"] = actSum[g] / float64(n)
		}
		if x, ok := pw[g]; ok {
			a[g+" power"] = x
		}
	}
	return a, nil
}

// promFleetHourly is each GPU's mean SM activity per hour (the Fleet page's
// sparklines), for the GPUs that report it.
func promFleetHourly(db *tsdb.DB) (answer, error) {
	sum, n := map[string]float64{}, map[string]int{}
	err := promEach(db, math.MinInt64, math.MaxInt64, func(l labels.Labels, ts int64, v float64) {
		k := fmt.Sprintf("%s|%d", l.Get("UUID"), ts/3_600_000*3_600_000)
		sum[k] += v
		n[k]++
	}, named("DCGM_FI_PROF_SM_ACTIVE"))
	a := answer{}
	for k, v := range sum {
		a[k+" sm"] = v / float64(n[k])
	}
	return a, err
}

// promActiveShare is each GPU's share of its samples with an activity measurement
// that were active (the rollups' rule, migration 0003: engine activity, else
// NVML's utilisation, at least 1 %, or DRAM at least 1 %, or PCIe at least 100 MB/s).
func promActiveShare(db *tsdb.DB) (answer, error) {
	vals, err := promTicks(db, math.MinInt64, math.MaxInt64, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL",
		"DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES")
	if err != nil {
		return nil, err
	}
	measured, active := map[string]int{}, map[string]int{}
	for k, v := range vals {
		act := v[0]
		if math.IsNaN(act) {
			act = v[1]
		}
		if math.IsNaN(act) {
			continue
		}
		measured[k.gpu]++
		if act >= 0.01 || zero(v[2]) >= 0.01 || zero(v[3])+zero(v[4]) >= 1e8 {
			active[k.gpu]++
		}
	}
	a := answer{}
	for g, n := range measured {
		a[g+" active"] = float64(active[g]) / float64(n)
	}
	return a, nil
}

// gpuTick is one GPU's sample time.
type gpuTick struct {
	gpu string
	ts  int64
}

// promTicks is, per GPU and sample time in [mint, maxt], the values of the
// series names in their order (NaN: not reported then).
func promTicks(db *tsdb.DB, mint, maxt int64, names ...string) (map[gpuTick][]float64, error) {
	vals := map[gpuTick][]float64{}
	for i, name := range names {
		err := promEach(db, mint, maxt, func(l labels.Labels, ts int64, v float64) {
			k := gpuTick{l.Get("UUID"), ts}
			p := vals[k]
			if p == nil {
				p = make([]float64, len(names))
				for j := range p {
					p[j] = math.NaN()
				}
				vals[k] = p
			}
			p[i] = v
		}, named(name))
		if err != nil {
			return nil, err
		}
	}
	return vals, nil
}

// zero is x, 0 when not reported (ifNull(x, 0)).
func zero(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// ourQueries answers the same queries from gpupool's tables: each as its
// production form reads it (the rollups where one holds the answer), checked
// against the same question asked of the raw tables, and both timed.
func ourQueries(s store.Store, tick time.Duration, job string, end int64) (queryTimes, error) {
	ctx := context.Background()
	h := fmt.Sprintf("%g", tick.Hours())
	run := func(sql string, key string, cols ...string) func() (answer, error) {
		p := store.Params{"end": strconv.FormatInt(end, 10), "job": job}
		return func() (answer, error) {
			res, err := s.Query(ctx, sql, p)
			if err != nil {
				return nil, err
			}
			a := answer{}
			rows := store.Read(res, sql)
			for rows.Next() {
				k := ""
				if key != "" {
					k = rows.Str(key)
				}
				for _, c := range cols {
					a[strings.TrimSpace(k+" "+c)] = rows.FloatOr(c, math.NaN())
				}
			}
			return a, rows.Err()
		}
	}
	const window = `ts > fromUnixTimestamp64Milli({end:Int64} - 300000) AND ts <= fromUnixTimestamp64Milli({end:Int64})`
	const activeRaw = `coalesce(gr_engine_active, gpu_util) IS NOT NULL AND (coalesce(gr_engine_active, gpu_util) >= 0.01
		OR ifNull(dram_active, 0) >= 0.01 OR ifNull(pcie_tx_bytes_per_s, 0) + ifNull(pcie_rx_bytes_per_s, 0) >= 100000000)`
	// The fleet's utilisation now (each GPU's latest sample) is read from the raw
	// samples: no rollup holds a latest sample.
	nowSQL := func(table string) func() (answer, error) {
		return run(`SELECT count() AS gpus, avg(u) AS util FROM (SELECT argMax(gpu_util, ts) AS u FROM `+table+`
		WHERE `+window+` AND gpu_util IS NOT NULL GROUP BY gpu_uuid)`, "", "gpus", "util")
	}
	// The Fleet page's question is the console's own: the views it reads over
	// the window's whole minutes, from the per-minute rollup ingest writes
	// (gpu_state_minute), and the same figures computed from gpu_samples.
	from, to := fleetWindow(end)
	fleetNowSQL := func(view string) func() (answer, error) {
		return run(`SELECT gpu_uuid, ifNull(sm_active, -1) AS sm, ifNull(power_w, -1) AS power, fb_used_mib AS fb
		FROM `+view+`(from = fromUnixTimestamp64Milli(`+strconv.FormatInt(from, 10)+`), to = fromUnixTimestamp64Milli(`+strconv.FormatInt(to, 10)+`))`,
			"gpu_uuid", "sm", "power", "fb")
	}
	// Each: the production form, then the raw tables' (the reference).
	forms := [][2]func() (answer, error){
		{run(`SELECT job, sum(sample_times) * `+h+` AS h FROM process_minute WHERE job != '' GROUP BY job`, "job", "h"),
			run(`SELECT job, uniqExact(gpu_uuid, ts) * `+h+` AS h FROM process_samples WHERE job != '' GROUP BY job`, "job", "h")},
		{run(`SELECT splitByChar('/', job)[2] || '|' || toString(toDate(minute)) AS k, sum(sample_times) * `+h+` AS h
			FROM process_minute WHERE job != '' GROUP BY k`, "k", "h"),
			run(`SELECT splitByChar('/', job)[2] || '|' || toString(toDate(ts)) AS k, uniqExact(job, gpu_uuid, ts) * `+h+` AS h
			FROM process_samples WHERE job != '' GROUP BY k`, "k", "h")},
		{run(`SELECT gpu_uuid || '|' || toString(toUnixTimestamp(minute) * 1000) AS k,
			ifNull(sum(sm_active_sum) / nullIf(sum(sm_active_samples), 0), -1) AS sm, max(fb_used_mib_max) AS fb
			FROM gpu_minute WHERE gpu_uuid IN (SELECT gpu_uuid FROM process_minute WHERE job = {job:String})
			GROUP BY gpu_uuid, minute`, "k", "sm", "fb"),
			run(`SELECT gpu_uuid || '|' || toString(toUnixTimestamp(toStartOfMinute(ts)) * 1000) AS k,
			ifNull(avg(sm_active), -1) AS sm, max(fb_used_mib) AS fb
			FROM gpu_samples WHERE gpu_uuid IN (SELECT gpu_uuid FROM process_samples WHERE job = {job:String})
			GROUP BY gpu_uuid, toStartOfMinute(ts)`, "k", "sm", "fb")},
		{nowSQL("gpu_samples"), nowSQL("gpu_samples")},
		{fleetNowSQL("gpu_state_recent"), fleetNowSQL("gpu_state_between")},
		{run(`SELECT gpu_uuid || '|' || toString(toUnixTimestamp(hour) * 1000) AS k, sum(sm_active_sum) / sum(sm_active_samples) AS sm
			FROM gpu_hour GROUP BY gpu_uuid, hour HAVING sum(sm_active_samples) > 0`, "k", "sm"),
			run(`SELECT gpu_uuid || '|' || toString(toUnixTimestamp(toStartOfHour(ts)) * 1000) AS k, avg(sm_active) AS sm
			FROM gpu_samples WHERE sm_active IS NOT NULL GROUP BY gpu_uuid, toStartOfHour(ts)`, "k", "sm")},
		{run(`SELECT gpu_uuid, sum(active_samples) / sum(activity_samples) AS active FROM gpu_hour
			GROUP BY gpu_uuid HAVING sum(activity_samples) > 0`, "gpu_uuid", "active"),
			run(`SELECT gpu_uuid, countIf(`+activeRaw+`) / countIf(coalesce(gr_engine_active, gpu_util) IS NOT NULL) AS active
			FROM gpu_samples GROUP BY gpu_uuid HAVING countIf(coalesce(gr_engine_active, gpu_util) IS NOT NULL) > 0`, "gpu_uuid", "active")},
	}
	out := queryTimes{}
	for i, n := range queryNames {
		f, err := timed(forms[i][0])
		if err != nil {
			return nil, fmt.Errorf("gpupool %s: %w", n, err)
		}
		r, err := timed(forms[i][1])
		if err != nil {
			return nil, fmt.Errorf("gpupool %s (raw tables): %w", n, err)
		}
		if err := compare(r.ans, f.ans, 1e-9); err != nil {
			return nil, fmt.Errorf("gpupool %s: the production form's answer is not the raw tables': %w", n, err)
		}
		out[n], out[n+" (raw)"] = f, r
	}
	return out, nil
}

// compare says where two answers differ by more than tol relative (the stores
// keep values at different precision: gpupool rounds ratios to 1/512).
func compare(a, b answer, tol float64) error {
	var diffs []string
	for k, va := range a {
		vb, ok := b[k]
		if !ok {
			diffs = append(diffs, k+": only in the first")
			continue
		}
		if math.Abs(va-vb) > tol*max(1, math.Abs(va)) {
			diffs = append(diffs, fmt.Sprintf("%s: %g against %g", k, va, vb))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, k+": only in the second")
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		return fmt.Errorf("%d differences, first: %s", len(diffs), strings.Join(diffs[:min(5, len(diffs))], "; "))
	}
	return nil
}
