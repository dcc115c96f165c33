package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store/backend"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestPricebookLoadAndCheck(t *testing.T) {
	dir := t.TempDir()
	g := &Globals{DataDir: dir, CHDBLib: chdbtest.LibPath(), LogLevel: "warn"}
	example := filepath.Join("..", "..", "deploy", "price_book.example.csv")
	var out bytes.Buffer
	if err := (&PricebookLoadCmd{File: example, out: &out}).Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	// Seven card prices, two clusters' energy prices and one pool's queue-wait price.
	if !strings.Contains(out.String(), "10 written, 0 already current") {
		t.Errorf("first load: %s", out.String())
	}
	out.Reset()
	if err := (&PricebookLoadCmd{File: example, out: &out}).Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0 written, 10 already current") {
		t.Errorf("loading the same file again wrote rows: %s", out.String())
	}

	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("card,effective_from,effective_to,price_per_gpu_hour,currency,note\nH100-80GB,2026-01-01,,abc,USD,\nL40S-48GB,2026-13-01,,1,USD,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := (&PricebookLoadCmd{File: bad, out: &out}).Run(g, t.Context())
	if err == nil || !strings.Contains(err.Error(), "line 2: price_per_gpu_hour") || !strings.Contains(err.Error(), "line 3: effective_from") || !strings.Contains(err.Error(), bad) {
		t.Fatalf("bad price book: %v", err)
	}

	// A card the price book does not price reports samples: check names it and fails.
	c, _, err := g.setup(nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := backend.Open(t.Context(), c.Store, newLogger("error"), false)
	if err != nil {
		t.Fatal(err)
	}
	l := ingest.NewLoader(st, 1000)
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	for at := day; at.Before(day.Add(2 * time.Hour)); at = at.Add(time.Minute) {
		s := schemas.NewGPUSample()
		s.TimeMs, s.GPUUUID, s.Card, s.Model, s.FBTotalMiB = at.UnixMilli(), "GPU-b200", "B200-192GB", "NVIDIA B200", 196608
		if err := l.AddSamples(t.Context(), &schemas.SampleBatch{Cluster: "c1", Node: "n1", GPUs: []schemas.GPUSample{s}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	check := &PricebookCheckCmd{From: day.Format(time.DateOnly), To: day.Add(24 * time.Hour).Format(time.DateOnly), out: &out}
	err = check.Run(g, t.Context())
	if err == nil || !strings.Contains(err.Error(), "1 problem") || !strings.Contains(out.String(), "B200-192GB") {
		t.Fatalf("check: err %v, output %q", err, out.String())
	}
	// An earlier period without samples has nothing to price.
	out.Reset()
	check = &PricebookCheckCmd{From: "2026-01-01", To: "2026-01-02", out: &out}
	if err := check.Run(g, t.Context()); err != nil || !strings.Contains(out.String(), "no problems") {
		t.Fatalf("check of an empty period: %v, %q", err, out.String())
	}
	if err := (&PricebookCheckCmd{From: "yesterday"}).Run(g, t.Context()); err == nil || !strings.Contains(err.Error(), "--from") {
		t.Errorf("bad --from: %v", err)
	}
}
