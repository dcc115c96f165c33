package traceanalysis

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas/trace"
)

// randomTrace writes n lines of a valid trace from rng: GPU and process samples
// of three GPUs and job events, with steps between records of nothing (the same
// time), seconds, minutes, hours past the gap limit and tens of days (the whole
// within the year a trace may span), duplicate lines and records a few seconds
// late.
func randomTrace(rng *rand.Rand, n int) []byte {
	var buf bytes.Buffer
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first := at
	var last string
	for range n {
		switch p := rng.IntN(100); {
		case p < 30:
			at = at.Add(time.Duration(rng.IntN(10)) * time.Second)
		case p < 50:
			at = at.Add(time.Duration(1+rng.IntN(30)) * time.Minute)
		case p < 65:
			at = at.Add(time.Duration(3+rng.IntN(45)) * time.Hour)
		case p < 70:
			at = at.Add(time.Duration(20+rng.IntN(80)) * 24 * time.Hour)
		case p < 80 && last != "":
			buf.WriteString(last) // a duplicate line
			continue
		case p < 90:
			at = at.Add(-time.Duration(rng.IntN(5)) * time.Second) // late
		}
		if at.Sub(first) > 360*24*time.Hour {
			at = first.Add(360 * 24 * time.Hour)
		}
		if at.Before(first) {
			at = first
		}
		ts := at.Format(time.RFC3339Nano)
		gpu := fmt.Sprintf("GPU-%d", rng.IntN(3))
		switch p := rng.IntN(100); {
		case p < 70:
			last = fmt.Sprintf(`{"type":"gpu","ts":%q,"cluster":"c1","node":"n1","gpu_uuid":%q,"model":"NVIDIA H100 80GB HBM3","fb_total_mib":81559,"fb_used_mib":%d,"gr_engine_active":%.2f,"power_w":%d}`,
				ts, gpu, rng.IntN(81559), rng.Float64(), 50+rng.IntN(600))
		case p < 85:
			last = fmt.Sprintf(`{"type":"process","ts":%q,"cluster":"c1","node":"n1","gpu_uuid":%q,"pid":%d,"job":"job-%d","fb_used_mib":%d}`,
				ts, gpu, 100+rng.IntN(5), rng.IntN(4), rng.IntN(40000))
		case p < 93:
			last = fmt.Sprintf(`{"type":"job","ts":%q,"job":"job-%d","event":"start","cluster":"c1","team":"t%d","gpus":1,"nodes":["n1"],"gpu_uuids":[%q]}`,
				ts, rng.IntN(4), rng.IntN(3), gpu)
		default:
			last = fmt.Sprintf(`{"type":"job","ts":%q,"job":"job-%d","event":"end","cluster":"c1","status":"succeeded"}`, ts, rng.IntN(4))
		}
		last += "\n"
		buf.WriteString(last)
	}
	return buf.Bytes()
}

// TestAnalyzeWorkIsLinear is the property that keeps a trace from choosing how
// long its analysis takes: for any accepted trace (random ones of 1 to 120 lines,
// with gaps, far-apart records within the allowed year, duplicates and late
// records, and two lines 300 days apart), the analyzer passes Run makes — its
// steps, counted, not timed — are at most k × lines + c, k being the passes one
// record can cause (those up to the gap limit after it, and one more). Before
// the gap limit and the span bound, two lines a year apart made 105,000 passes.
func TestAnalyzeWorkIsLinear(t *testing.T) {
	cfg := testConfig(t)
	// Lone lines days after the rest are what this property is about: allow them
	// (TestPerturbedTraceBillsTheSameOrFails holds the default skew).
	cfg.FutureSkew = trace.DefaultMaxSpan
	k := int(cfg.GapLimit/cfg.Analyzer.Interval) + 2
	const c = 2
	rng := rand.New(rand.NewPCG(21, 7))
	traces := [][]byte{
		[]byte(`{"type":"gpu","ts":"2026-01-01T00:00:00Z","node":"n1","gpu_uuid":"GPU-1"}` + "\n" +
			`{"type":"gpu","ts":"2026-10-28T00:00:00Z","node":"n1","gpu_uuid":"GPU-1"}` + "\n"),
	}
	// Each trace opens and migrates a store of its own (about 8 s on a loaded
	// machine): seven sizes keep the package well within go test's 10 minutes.
	sizes := []int{1, 3, 8, 21, 55, 120}
	if testing.Short() {
		sizes = []int{3, 34, 120} // each trace opens and migrates a store of its own
	}
	for _, n := range sizes {
		traces = append(traces, randomTrace(rng, n))
	}
	worst := 0.0
	for i, data := range traces {
		lines := bytes.Count(data, []byte("\n"))
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		steps := 0
		a.pass = func(context.Context, time.Time) error { steps++; return nil }
		rep, err := a.Run(t.Context(), bytes.NewReader(data))
		if err != nil {
			t.Fatalf("trace %d (%d lines) was not accepted: %v", i, lines, err)
		}
		if steps != rep.Trace.Passes {
			t.Errorf("trace %d: %d steps counted, the report says %d passes", i, steps, rep.Trace.Passes)
		}
		if steps > k*lines+c {
			t.Errorf("trace %d: %d lines spanning %s made %d passes, more than %d × %d + %d",
				i, lines, rep.Trace.End.Sub(rep.Trace.Start), steps, k, lines, c)
		}
		worst = max(worst, float64(steps)/float64(lines))
	}
	t.Logf("%d traces: at most %.1f passes per line (bound %d per line + %d)", len(traces), worst, k, c)
}
