package findings

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// statsReq is one hint detector's question for one pool group: the distribution
// of activity of each job of set over the window ending at the pass's time,
// keeping the jobs whose samples span the window on every GPU and that condition
// (SQL over the columns of newStatsQuery's result) selects.
type statsReq struct {
	set    jobSet
	window time.Duration
	// condition may use params' names as query parameters; active (the activity
	// threshold), mb_dram and mb_sm (memory-bound samples: DRAM at least, SM at
	// most) shape the per-GPU aggregation itself and default to 0.
	condition string
	params    store.Params
	// withDRAM adds the DRAM and tensor medians (zeros otherwise): only some
	// detectors need them, and they cost two quantile states per GPU.
	withDRAM bool
}

// hintKinds are the detectors built on jobStats, each with the requests it makes
// of a pass (one per pool group, in poolGroups' order).
var hintKinds = []struct {
	kind schemas.FindingKind
	reqs func(a *Analyzer, ps *pass) []statsReq
}{
	{schemas.KindMemoryBound, (*Analyzer).memoryBoundReqs},
	{schemas.KindMemoryCapacity, (*Analyzer).memoryCapacityReqs},
	{schemas.KindWrongCard, (*Analyzer).wrongCardReqs},
	{schemas.KindLowUtil, (*Analyzer).lowUtilReqs},
	{schemas.KindComputeBound, (*Analyzer).computeBoundReqs},
}

// groupReqs makes one request per pool group, in order: mk gives the request for
// a group's settings and how long its jobs must have held their GPUs.
func groupReqs[T any](ps *pass, groups []poolGroup[T], mk func(c T) (held time.Duration, r statsReq)) []statsReq {
	out := make([]statsReq, len(groups))
	for i, g := range groups {
		held, r := mk(g.cfg)
		r.set = selectJobs(ps.running, g, ps.now.Add(-held))
		out[i] = r
	}
	return out
}

// passStats is a pass's answer to every hint detector's requests, read in one
// scan of the GPU samples: the detectors ask about the same GPUs over windows
// that nest (an hour, two hours), so one read of the longest window, aggregated
// per GPU and per stretch between window starts, serves them all, where one
// query each read the samples five times.
type passStats struct {
	once sync.Once
	by   map[schemas.FindingKind][][]jobStats
	err  error
}

// jobStats returns kind's answers, one per request its reqs function makes
// (its pool groups, in order).
func (ps *pass) jobStats(ctx context.Context, a *Analyzer, kind schemas.FindingKind) ([][]jobStats, error) {
	ps.hs.once.Do(func() { ps.hs.by, ps.hs.err = a.readPassStats(ctx, ps) })
	if ps.hs.err != nil {
		return nil, ps.hs.err
	}
	out, ok := ps.hs.by[kind]
	if !ok {
		return nil, fmt.Errorf("%s: no job statistics requested for this kind", kind)
	}
	return out, nil
}

// readPassStats builds every hint kind's requests and answers them together.
// The neighbours' read and the statistics' run side by side: a job a neighbour
// disturbed is dropped from the answers (its statistics are its own, whatever
// other jobs the query judged).
func (a *Analyzer) readPassStats(ctx context.Context, ps *pass) (map[schemas.FindingKind][][]jobStats, error) {
	var all []statsReq
	type span struct{ from, n int }
	spans := map[schemas.FindingKind]span{}
	var windows []time.Duration
	for _, h := range hintKinds {
		rs := h.reqs(a, ps)
		for i := range rs {
			// A GPU several running jobs share reports their activity together:
			// no one job's distribution can be read from it.
			rs[i].set = rs[i].set.without(func(j *runningJob) bool {
				return slices.ContainsFunc(j.gpus, func(u string) bool { return len(ps.holders[u]) > 1 })
			})
			if len(rs[i].set.gpus) > 0 && !slices.Contains(windows, rs[i].window) {
				windows = append(windows, rs[i].window)
			}
		}
		spans[h.kind] = span{len(all), len(rs)}
		all = append(all, rs...)
	}
	var (
		wg       sync.WaitGroup
		near     []map[string][]string
		nearErr  error
		res      [][]jobStats
		statsErr error
	)
	wg.Go(func() { near, nearErr = queryNeighbours(ctx, a.q, ps, windows) })
	res, statsErr = queryJobStats(ctx, a, ps, all)
	wg.Wait()
	if err := cmp.Or(statsErr, nearErr); err != nil {
		return nil, fmt.Errorf("job statistics: %w", err)
	}
	// Nor one a neighbour used during the window and has left since.
	for i, r := range all {
		if len(res[i]) == 0 {
			continue
		}
		active := near[slices.Index(windows, r.window)]
		res[i] = slices.DeleteFunc(res[i], func(s jobStats) bool {
			return slices.ContainsFunc(s.j.gpus, func(u string) bool {
				return slices.ContainsFunc(active[u], func(o string) bool { return o != s.j.job })
			})
		})
	}
	by := make(map[schemas.FindingKind][][]jobStats, len(spans))
	for k, s := range spans {
		by[k] = res[s.from : s.from+s.n]
	}
	return by, nil
}

// queryJobStats answers reqs in one query (newStatsQuery): its result for
// reqs[i] is out[i].
func queryJobStats(ctx context.Context, a *Analyzer, ps *pass, reqs []statsReq) ([][]jobStats, error) {
	out := make([][]jobStats, len(reqs))
	q := newStatsQuery(ps.now, reqs, a.cfg.MinCoverage, a.cfg.MinSamples)
	if q == nil {
		return out, nil
	}
	res, err := a.q.Query(ctx, q.sql, q.params)
	if err != nil {
		return nil, err
	}
	r := rowReader{res: res}
	for i := range res.Rows {
		k := int(r.int(i, "req"))
		if k < 0 || k >= len(reqs) {
			return nil, fmt.Errorf("read result: row %d answers request %d of %d", i, k, len(reqs))
		}
		s := jobStats{
			j: reqs[k].set.byKey[r.str(i, "job")], node: r.str(i, "node"), card: r.str(i, "card"),
			gpus: r.strings(i, "gpus"), migProfiles: r.strings(i, "mig_profiles"), samples: r.int(i, "samples"),
			activeFraction: r.float(i, "active_fraction"), smQ: r.floats(i, "sm_q"), smActiveQ: r.floats(i, "sm_active_q"),
			memP10Fraction: r.float(i, "mem_p10_fraction"),
			dramP50:        r.float(i, "dram_p50"), tensorP50: r.float(i, "tensor_p50"),
			mbSustained: r.float(i, "mb_sustained"), peakMemMiB: r.float(i, "peak_mem_mib"), fbTotalMiB: r.float(i, "fb_total_mib"),
		}
		// A job whose GPUs are not all sampled through the window is not judged.
		if s.j == nil || len(s.gpus) != len(s.j.gpus) {
			continue
		}
		slices.Sort(s.gpus)
		for len(s.smQ) < 4 {
			s.smQ = append(s.smQ, 0)
		}
		for len(s.smActiveQ) < 2 {
			s.smActiveQ = append(s.smActiveQ, 0)
		}
		out[k] = append(out[k], s)
	}
	if r.err != nil {
		return nil, fmt.Errorf("read result: %w", r.err)
	}
	return out, nil
}

// statsQuery is the one query answering a set of requests, with its parameters.
type statsQuery struct {
	sql    string
	params store.Params
}

// paramRef matches a query parameter's opening, {name:.
var paramRef = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*):`)

// newStatsQuery builds the one query answering reqs, or nil when no request has
// a job to judge. The samples of the longest window are aggregated per GPU and
// per stretch between consecutive window starts (seg 0 the most recent), with
// one count and SM quantile state per distinct activity threshold and one count
// per distinct memory-bound pair; each request then merges, per job and GPU, the
// stretches its window covers (so a GPU's span is its own first to last sample),
// and per job its GPUs. Quantile states merge exactly (BFloat16 histograms), so a
// request's answer is what a query of its own would return. Each request's
// condition applies to its own rows, with its parameters renamed r<i>_<name>.
func newStatsQuery(now time.Time, reqs []statsReq, minCoverage float64, minSamples int) *statsQuery {
	p := store.Params{"to": tsParam(now), "min_samples": intParam(int64(minSamples))}
	var windows []time.Duration
	var acts, mbs []string
	dram := false
	var jobs, gpus, jreqs []string
	var nseg, act, mb, withDRAM, minSpan []string
	var having []string
	union := map[string]bool{}
	for i, r := range reqs {
		if len(r.set.gpus) == 0 {
			continue
		}
		if !slices.Contains(windows, r.window) {
			windows = append(windows, r.window)
		}
		dram = dram || r.withDRAM
		jobs = append(jobs, r.set.jobs...)
		gpus = append(gpus, r.set.gpus...)
		for _, u := range r.set.gpus {
			union[u] = true
			jreqs = append(jreqs, strconv.Itoa(i))
		}
		cond := paramRef.ReplaceAllStringFunc(r.condition, func(m string) string {
			name := m[1 : len(m)-1]
			if _, ok := r.params[name]; !ok {
				return m
			}
			return fmt.Sprintf("{r%d_%s:", i, name)
		})
		for k, v := range r.params {
			p[fmt.Sprintf("r%d_%s", i, k)] = v
		}
		having = append(having, fmt.Sprintf("(req = %d AND (%s))", i, cond))
	}
	if len(jobs) == 0 {
		return nil
	}
	slices.Sort(windows)
	indexOf := func(list *[]string, v string) int {
		if k := slices.Index(*list, v); k >= 0 {
			return k
		}
		*list = append(*list, v)
		return len(*list) - 1
	}
	n := len(reqs)
	nseg, act, mb, withDRAM, minSpan = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, r := range reqs {
		get := func(k string) string {
			if v, ok := r.params[k]; ok {
				return v
			}
			return "0"
		}
		nseg[i] = strconv.Itoa(slices.Index(windows, r.window) + 1)
		act[i] = strconv.Itoa(indexOf(&acts, get("active")))
		mb[i] = strconv.Itoa(indexOf(&mbs, get("mb_dram")+"/"+get("mb_sm")))
		withDRAM[i] = "0"
		if r.withDRAM {
			withDRAM[i] = "1"
		}
		minSpan[i] = durMsParam(time.Duration(float64(r.window) * minCoverage))
	}
	for k, w := range windows {
		p["from_"+strconv.Itoa(k)] = tsParam(now.Add(-w))
	}
	for k, v := range acts {
		p["active_"+strconv.Itoa(k)] = v
	}
	for k, v := range mbs {
		d, s, _ := strings.Cut(v, "/")
		p["mb_dram_"+strconv.Itoa(k)], p["mb_sm_"+strconv.Itoa(k)] = d, s
	}
	all := make([]string, 0, len(union))
	for u := range union {
		all = append(all, u)
	}
	slices.Sort(all)
	p["gpus"], p["jobs"], p["jgpus"] = arrayParam(all), arrayParam(jobs), arrayParam(gpus)
	p["jreqs"] = "[" + strings.Join(jreqs, ",") + "]"
	p["req_nseg"], p["req_act"], p["req_mb"] = "["+strings.Join(nseg, ",")+"]", "["+strings.Join(act, ",")+"]", "["+strings.Join(mb, ",")+"]"
	p["req_dram"], p["req_min_span"] = "["+strings.Join(withDRAM, ",")+"]", "["+strings.Join(minSpan, ",")+"]"

	var b strings.Builder
	pick := func(sel string, n int, expr func(k int) string) string {
		if n == 1 {
			return expr(0)
		}
		var m strings.Builder
		m.WriteString("multiIf(")
		for k := range n - 1 {
			fmt.Fprintf(&m, "%s = %d, %s, ", sel, k, expr(k))
		}
		m.WriteString(expr(n-1) + ")")
		return m.String()
	}
	// Level 3: per request and job.
	b.WriteString(`SELECT
    g.req AS req, g.job AS job,
    any(g.node) AS node, any(g.card) AS card, max(g.fb_total_mib) AS fb_total_mib,
    groupArray(g.gpu_uuid) AS gpus, groupUniqArray(g.mig_profile) AS mig_profiles,
    sum(g.samples) AS samples, sum(g.sm_samples) AS sm_samples, min(g.span_ms) AS span_ms,
    sum(g.active) / samples AS active_fraction,
    quantilesBFloat16Merge(0.1, 0.5, 0.9, 0.95)(g.sm_q) AS sm_q,
    `)
	b.WriteString(pick("g.act", len(acts), func(k int) string {
		return fmt.Sprintf("quantilesBFloat16Merge(0.5, 0.95)(g.sm_active_q_%d)", k)
	}))
	b.WriteString(` AS sm_active_q,
    quantileBFloat16Merge(0.1)(g.mem_q) / greatest(max(g.fb_total_mib), 1) AS mem_p10_fraction,
    `)
	if dram {
		b.WriteString(`if(g.dram = 1, quantileBFloat16Merge(0.5)(g.dram_q), 0) AS dram_p50, if(g.dram = 1, quantileBFloat16Merge(0.5)(g.tensor_q), 0) AS tensor_p50,`)
	} else {
		b.WriteString(`0 AS dram_p50, 0 AS tensor_p50,`)
	}
	b.WriteString(`
    sum(g.mbc) / samples AS mb_sustained,
    max(g.peak_mem_mib) AS peak_mem_mib
`)
	b.WriteString(`FROM (
    SELECT
        j.req AS req, j.job AS job, j.act AS act, j.dram AS dram, j.min_span AS min_span, s.gpu_uuid AS gpu_uuid,
        any(s.node) AS node, any(s.card) AS card, any(s.mig_profile) AS mig_profile, max(s.fb_total_mib) AS fb_total_mib,
        sum(s.samples) AS samples, sum(s.sm_samples) AS sm_samples,
        dateDiff('millisecond', min(s.first_ts), max(s.last_ts)) AS span_ms,
        `)
	b.WriteString(pick("j.act", len(acts), func(k int) string { return fmt.Sprintf("sum(s.active_%d)", k) }))
	b.WriteString(` AS active,
        quantilesBFloat16MergeState(0.1, 0.5, 0.9, 0.95)(s.sm_q) AS sm_q,
        `)
	for k := range acts {
		fmt.Fprintf(&b, "quantilesBFloat16MergeState(0.5, 0.95)(s.sm_active_q_%d) AS sm_active_q_%d, ", k, k)
	}
	b.WriteString(`quantileBFloat16MergeState(0.1)(s.mem_q) AS mem_q,
        `)
	if dram {
		b.WriteString(`quantileBFloat16MergeState(0.5)(s.dram_q) AS dram_q, quantileBFloat16MergeState(0.5)(s.tensor_q) AS tensor_q,
        `)
	}
	b.WriteString(pick("j.mb", len(mbs), func(k int) string { return fmt.Sprintf("sum(s.mb_%d)", k) }))
	b.WriteString(` AS mbc,
        max(s.peak_mem_mib) AS peak_mem_mib
    FROM (
        SELECT
            gpu_uuid, `)
	seg := "0"
	if len(windows) > 1 {
		var m strings.Builder
		m.WriteString("multiIf(")
		for k := range len(windows) - 1 {
			fmt.Fprintf(&m, "ts > {from_%d:DateTime64(3, 'UTC')}, %d, ", k, k)
		}
		fmt.Fprintf(&m, "%d)", len(windows)-1)
		seg = m.String()
	}
	b.WriteString(seg)
	b.WriteString(` AS seg,
            any(node) AS node, any(card) AS card, any(mig_profile) AS mig_profile, max(fb_total_mib) AS fb_total_mib,
            count() AS samples, countIf(sm_active IS NOT NULL) AS sm_samples, min(ts) AS first_ts, max(ts) AS last_ts,
            `)
	for k := range acts {
		fmt.Fprintf(&b, "countIf(%s >= {active_%d:Float64}) AS active_%d,\n            ", activeExpr, k, k)
		fmt.Fprintf(&b, "quantilesBFloat16State(0.5, 0.95)(if(%s >= {active_%d:Float64}, sm_active, NULL)) AS sm_active_q_%d,\n            ", activeExpr, k, k)
	}
	b.WriteString(`quantilesBFloat16State(0.1, 0.5, 0.9, 0.95)(sm_active) AS sm_q,
            quantileBFloat16State(0.1)(fb_used_mib) AS mem_q,
            `)
	if dram {
		b.WriteString(`quantileBFloat16State(0.5)(dram_active) AS dram_q, quantileBFloat16State(0.5)(tensor_active) AS tensor_q,
            `)
	}
	for k := range mbs {
		fmt.Fprintf(&b, "countIf(dram_active >= {mb_dram_%d:Float64} AND sm_active <= {mb_sm_%d:Float64}) AS mb_%d,\n            ", k, k, k)
	}
	fmt.Fprintf(&b, `max(fb_used_mib) AS peak_mem_mib
        FROM gpu_samples
        WHERE ts > {from_%d:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
          AND gpu_uuid IN {gpus:Array(String)}
        GROUP BY gpu_uuid, seg
    ) AS s
    INNER JOIN (
        SELECT tupleElement(t, 1) AS job, tupleElement(t, 2) AS gpu_uuid, tupleElement(t, 3) AS req,
               {req_nseg:Array(UInt8)}[req + 1] AS nseg, {req_act:Array(UInt8)}[req + 1] AS act,
               {req_mb:Array(UInt8)}[req + 1] AS mb, {req_dram:Array(UInt8)}[req + 1] AS dram,
               {req_min_span:Array(Int64)}[req + 1] AS min_span
        FROM (SELECT arrayJoin(arrayZip({jobs:Array(String)}, {jgpus:Array(String)}, {jreqs:Array(UInt16)})) AS t)
    ) AS j ON s.gpu_uuid = j.gpu_uuid
    WHERE s.seg < j.nseg
    GROUP BY j.req, j.job, j.act, j.mb, j.dram, j.min_span, s.gpu_uuid
) AS g
GROUP BY g.req, g.job, g.act, g.dram, g.min_span
HAVING span_ms >= g.min_span AND samples >= {min_samples:UInt64} AND sm_samples >= {min_samples:UInt64}
   AND (%s)
ORDER BY req, job`, len(windows)-1, strings.Join(having, "\n     OR "))
	return &statsQuery{sql: b.String(), params: p}
}
