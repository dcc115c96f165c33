package traceanalysis

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

var updateVariants = flag.Bool("update-variants", false, "rewrite analyzer/testdata/variants/fleet.jsonl.gz")

const variantFile = "../../analyzer/testdata/variants/fleet.jsonl.gz"

// TestVariantTraceUpToDate: the checked-in variant trace is what the generator
// writes (-update-variants rewrites it), and it stays small.
func TestVariantTraceUpToDate(t *testing.T) {
	want := writeVariantTrace()
	if *updateVariants {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write(want); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(variantFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(variantFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 1<<20 {
		t.Errorf("%s is %d bytes, keep it under 1 MiB", variantFile, len(raw))
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the generator writes; run go test ./internal/traceanalysis -run TestVariantTraceUpToDate -update-variants", variantFile)
	}
}

// TestVariantTraces runs the analysis `gpupool analyze --trace` runs on the
// hand-written variant fleet and scores it against its truth: every planted
// case found (recall 1 for each kind), no finding that no truth holds (the
// look-alikes: checkpoints, evaluation phases, warm-up, compute-light, bursty
// inference, busy neighbours, an offline node), and no right-sizing or sharing
// advice for the stuck jobs.
func TestVariantTraces(t *testing.T) {
	f, err := os.Open("../../analyzer/testdata/truth/variants.truth.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	truth, err := ReadTruth(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(variantFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.File = "fleet.jsonl.gz"
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(t.Context(), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Trace.DuplicateRecords == 0 {
		t.Errorf("the trace's duplicate lines were not seen as such: %+v", rep.Trace)
	}
	scores := Score(rep.Findings, truth, Windows(cfg.Analyzer.Findings), rep.Trace.End)
	var table strings.Builder
	if err := WriteScore(&table, scores); err != nil {
		t.Fatal(err)
	}
	t.Logf("scores:\n%s", table.String())
	for _, s := range scores {
		if s.Detectable > 0 && s.Recall() != 1 {
			t.Errorf("%s: recall %.3f, missed %v", s.Kind, s.Recall(), s.Misses)
		}
		if len(s.FalseFindings) > 0 {
			t.Errorf("%s: findings no truth holds (look-alikes flagged): %v", s.Kind, s.FalseFindings)
		}
	}
	stuck := map[string]bool{}
	for _, tr := range truth {
		if tr.Kind == schemas.KindHung || tr.Kind == schemas.KindIdle {
			stuck[tr.Job] = true
		}
	}
	for _, f := range rep.Findings {
		if stuck[f.Job] && (f.Kind == schemas.KindMemoryCapacity || f.Kind == schemas.KindWrongCard || f.Kind == schemas.KindLowUtil) {
			t.Errorf("stuck job %s advised %s: %s", f.Job, f.Kind, f.Recommendation)
		}
	}
}
