package demo

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// TestMain removes the test binary's chDB data path when the tests end.
func TestMain(m *testing.M) { chdbtest.Main(m) }

// TestWriteCapacity forecasts the default fleet from the simulator's four weeks
// before the demo's start: a line per cluster and card type with the plan, and
// the label saying where the history comes from.
func TestWriteCapacity(t *testing.T) {
	st := chdbtest.Open(t)
	ctx := t.Context()
	if _, err := store.Migrate(ctx, st, schemas.MigrationParams{DB: st.Database(), RawTTLDays: 30}); err != nil {
		t.Fatal(err)
	}
	rows, err := pricebook.Read("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pricebook.Load(ctx, st, rows); err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Start = time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := writeCapacity(ctx, &b, st, cfg); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log(out)
	for _, want := range []string{"simulator's history", "us-east-a", "eu-west-b", "H100-80GB", "Plan for a p95 wait ≤", " USD"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
