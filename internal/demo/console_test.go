package demo

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/console"
	"github.com/gpupool/gpupool/internal/simrun"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// TestConsolePoolsReadDemoScheduler: the demo's console reads its own
// scheduler, so the Pools page shows the queues and quotas the demo admits by
// instead of "No scheduler API configured" (issue 43).
func TestConsolePoolsReadDemoScheduler(t *testing.T) {
	ctx := t.Context()
	st := chdbtest.Open(t)
	if _, err := store.Migrate(ctx, st, schemas.MigrationParams{DB: st.Database(), RawTTLDays: 30}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	fc := sim.DefaultConfig()
	fc.Start = now
	fleet, err := sim.New(fc)
	if err != nil {
		t.Fatal(err)
	}
	sc := scheduler.DefaultConfig()
	sc.Policies = nil
	if sc.Model, err = simrun.GateModel(fleet.Capacity()); err != nil {
		t.Fatal(err)
	}
	svc, err := scheduler.New(sc, scheduler.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	d := &Demo{log: slog.New(slog.DiscardHandler), out: &out, store: st, loop: &loop{svc: svc}, consoleAddr: "127.0.0.1:0"}
	d.cfg.Auth, d.cfg.Console = auth.DefaultConfig(), console.DefaultConfig()
	d.cfg.Auth.Mode = auth.ModeNone
	if err := d.startConsole(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(d.consoleURL + "/pools")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	page := string(body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /pools: %s\n%s", res.Status, page)
	}
	if strings.Contains(page, "no-scheduler") {
		t.Error("the demo's Pools page says no scheduler is configured")
	}
	for _, q := range sc.Model.Queues {
		if !strings.Contains(page, q.Name) {
			t.Errorf("the Pools page does not show queue %q", q.Name)
		}
	}
}
