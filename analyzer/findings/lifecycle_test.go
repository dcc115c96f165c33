package findings

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// notebook loads a notebook that is busy for its first hour, idle for two, busy
// for 20 minutes, then idle again until 6 h; and a stray process that holds memory
// from 1 h to 2 h 30.
func notebook(fx *fixture) {
	t0 := fx.t0
	fx.job("nb", "research", PoolDev, "n1", []string{"GPU-A"}, t0, time.Time{})
	fx.series("n1", h100("GPU-A"), t0, fx.at(6*time.Hour), 30*time.Second, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		if el < time.Hour || el >= 3*time.Hour && el < 3*time.Hour+20*time.Minute {
			set(s, 0.5, 0.3, 0.1, 0.2, 100e6, 8000)
			return proc(101, "nb", 8000, 0.3)
		}
		set(s, 0, 0, 0, 0, 10e3, 8000)
		return proc(101, "nb", 8000, 0)
	})
	fx.series("n1", h100("GPU-B"), t0, fx.at(6*time.Hour), 30*time.Second, func(el time.Duration, s *schemas.GPUSample) []schemas.ProcessSample {
		set(s, 0, 0, 0, 0, 1e3, 2)
		if el < time.Hour || el > 150*time.Minute {
			return nil
		}
		s.FBUsedMiB = 1500
		return proc(300, "", 1500, 0)
	})
	fx.flush()
}

// decode parses published messages.
func decode(t *testing.T, msgs []busMsg) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range msgs {
		var v map[string]any
		if err := json.Unmarshal(m.data, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestLifecycle(t *testing.T) {
	fx := newFixture(t)
	notebook(fx)
	cfg := DefaultConfig()
	cfg.CriticalWasteGPUHours = 1
	bus := &fakeBus{}
	tokens := &tokenStore{Store: fx.s}
	a, err := New(cfg, tokens, WithPrices(testPrices), WithPublisher(bus))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var log []string
	var idleID string
	for m := 30; m <= 360; m += 5 {
		now := fx.at(time.Duration(m) * time.Minute)
		tokens.record = m == 100
		res, err := a.Run(ctx, now)
		if err != nil {
			t.Fatalf("pass at %d min: %v", m, err)
		}
		for _, v := range decode(t, bus.take()) {
			log = append(log, v["event"].(string)+" "+v["kind"].(string)+" at "+now.Format("15:04"))
			if v["kind"] == "idle" {
				idleID = v["id"].(string)
			}
		}
		if m == 90 && (len(res.Opened) != 1 || res.Opened[0].Kind != schemas.KindIdle) {
			t.Errorf("at 1h30 opened %v, want the idle notebook", res.Opened)
		}
		if m == 100 && (len(res.Updated) != 2 || res.Open != 2) {
			t.Errorf("at 1h40: %d updated, %d open; want both findings updated and open", len(res.Updated), res.Open)
		}
		// Re-running a pass at the same time must write nothing new: it writes the
		// same versions with the same deduplication token, which ClickHouse drops.
		if m == 100 {
			if _, err := a.Run(ctx, now); err != nil {
				t.Fatal(err)
			}
			tokens.record = false
			if msgs := bus.take(); len(msgs) != 0 {
				t.Errorf("the repeated pass published %d messages", len(msgs))
			}
		}
	}
	want := []string{
		"opened zombie at 01:10",  // the stray appears at 1 h; 10 min orphan window
		"opened idle at 01:30",    // idle from 1 h; 30 min window
		"escalated idle at 02:00", // waste reaches 1 GPU-hour (counted from 1 h)
		"escalated zombie at 02:00",
		"resolved zombie at 02:45", // last seen 2:30; resolve_after 15 min
		"resolved idle at 03:15",   // busy from 3 h: last seen 3:00
		"opened idle at 03:50",     // idle again from 3:20
		"escalated idle at 04:20",
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Errorf("published:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}

	hist, err := a.History(ctx, fx.t0, fx.at(6*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var eps []schemas.Finding
	for _, f := range hist {
		if f.ID == idleID {
			eps = append(eps, f)
		}
	}
	if len(eps) != 2 {
		t.Fatalf("idle history: %d episodes, want 2: %+v", len(eps), eps)
	}
	e1, e2 := eps[0], eps[1]
	if e1.Episode != 1 || e1.State != schemas.StateResolved || !e1.FirstSeen.Equal(fx.at(90*time.Minute)) || !e1.LastSeen.Equal(fx.at(3*time.Hour)) ||
		!e1.ResolvedAt.Equal(fx.at(195*time.Minute)) || !e1.Since.Equal(fx.at(time.Hour)) || e1.WasteGPUHours != 2 || e1.Severity != schemas.SeverityCritical {
		t.Errorf("episode 1: %+v", e1)
	}
	if e2.Episode != 2 || e2.State != schemas.StateUpdated || !e2.FirstSeen.Equal(fx.at(230*time.Minute)) || !e2.LastSeen.Equal(fx.at(6*time.Hour)) ||
		!e2.Since.Equal(fx.at(200*time.Minute)) || math.Abs(e2.WasteGPUHours-160.0/60) > 0.001 {
		t.Errorf("episode 2: %+v", e2)
	}

	if len(tokens.seen) < 2 || tokens.seen[0] != tokens.seen[1] {
		t.Errorf("insert tokens of the pass at 1:40 and its repeat: %v; the same versions must carry the same token", tokens.seen)
	}
	r, err := fx.s.Query(ctx, "SELECT id, episode, state, waste_gpu_hours FROM findings_open", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 1 {
		t.Errorf("findings_open: %v, want the second idle episode only", r.Rows)
	}
}

// tokenStore records the deduplication tokens of inserts while record is set.
type tokenStore struct {
	Store
	record bool
	seen   []string
}

func (s *tokenStore) Insert(ctx context.Context, table string, b *store.Block, token string) error {
	if s.record {
		s.seen = append(s.seen, token)
	}
	return s.Store.Insert(ctx, table, b, token)
}

// failingStore fails the queries whose text contains match.
type failingStore struct {
	Store
	match string
	on    bool
}

var errInjected = errors.New("injected failure")

func (s *failingStore) Query(ctx context.Context, q string, p store.Params) (*store.Result, error) {
	if s.on && strings.Contains(q, s.match) {
		return nil, errInjected
	}
	return s.Store.Query(ctx, q, p)
}

func TestFailuresLeaveFindingsAlone(t *testing.T) {
	fx := newFixture(t)
	notebook(fx)
	fs := &failingStore{Store: fx.s, match: "groupUniqArray(job) AS jobs"} // the zombie detector's candidates
	bus := &fakeBus{}
	a, err := New(DefaultConfig(), fs, WithPrices(testPrices), WithPublisher(bus))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if res, err := a.Run(ctx, fx.at(2*time.Hour)); err != nil || len(res.Opened) != 2 {
		t.Fatalf("first pass: %v, opened %v", err, res.Opened)
	}

	t.Run("detector fails", func(t *testing.T) {
		// The stray is gone after 2:30; with the zombie detector failing, its finding
		// must stay open rather than be resolved for want of a detection.
		fs.on = true
		res, err := a.Run(ctx, fx.at(3*time.Hour))
		fs.on = false
		if !errors.Is(err, ErrDetector) || !errors.Is(err, errInjected) || res.Failed[schemas.KindZombie] == nil {
			t.Fatalf("err %v, failed %v; want ErrDetector wrapping the failure", err, res.Failed)
		}
		if len(res.Resolved) != 0 || len(res.Updated) != 1 || res.Open != 2 {
			t.Errorf("resolved %v, updated %d, open %d: the zombie must be left open", res.Resolved, len(res.Updated), res.Open)
		}
		res, err = a.Run(ctx, fx.at(3*time.Hour+5*time.Minute))
		if err != nil || len(res.Resolved) != 1 || res.Resolved[0].Kind != schemas.KindZombie {
			t.Errorf("detector back: err %v, resolved %v; want the zombie resolved", err, res.Resolved)
		}
	})

	t.Run("bus down", func(t *testing.T) {
		// Busy again since 3:00, the notebook's idle finding resolves at 3:15; the
		// resolution cannot be published, but it is written.
		bus.take()
		bus.fail = true
		res, err := a.Run(ctx, fx.at(3*time.Hour+15*time.Minute))
		bus.fail = false
		if err != nil || res.PublishFailed != 1 || res.Published != 0 || len(res.Resolved) != 1 || res.Open != 0 {
			t.Errorf("err %v, published %d, failed %d, resolved %d, open %d: a bus failure must not fail the pass",
				err, res.Published, res.PublishFailed, len(res.Resolved), res.Open)
		}
	})

	t.Run("store down", func(t *testing.T) {
		fs.match, fs.on = "FROM findings", true
		defer func() { fs.on = false }()
		if _, err := a.Run(ctx, fx.at(5*time.Hour)); err == nil || !errors.Is(err, errInjected) {
			t.Errorf("err %v: a pass that cannot read the open findings must fail", err)
		}
	})
}

func TestJSONNames(t *testing.T) {
	f := schemas.Finding{
		ID: "x", Kind: schemas.KindZombie, Job: "j", Team: "t", Node: "n", GPUUUIDs: []string{"GPU-1", "GPU-2"}, PID: 7,
		FirstSeen: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), LastSeen: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC),
		Evidence: map[string]float64{"window_minutes": 10}, WasteGPUHours: 1.5, WasteCost: 6, Currency: "USD",
	}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"kind": "zombie", "job": "j", "team": "t", "node": "n", "gpu_uuid": "GPU-1", "pid": 7.0,
		"first_seen": "2026-01-01T00:00:00Z", "last_seen": "2026-01-01T01:00:00Z", "waste_gpu_hours": 1.5, "waste_cost": 6.0,
	}
	for k, w := range want {
		if v[k] != w {
			t.Errorf("%s = %v, want %v (%s)", k, v[k], w, data)
		}
	}
	if ev, ok := v["evidence"].(map[string]any); !ok || ev["window_minutes"] != 10.0 {
		t.Errorf("evidence = %v", v["evidence"])
	}
	if _, ok := v["resolved_at"]; ok {
		t.Errorf("resolved_at present on an open finding: %s", data)
	}
	ev, err := schemas.EncodeFindingMessage(&schemas.FindingMessage{Event: schemas.EventResolved, Finding: f})
	if err != nil || !strings.Contains(string(ev), `"event":"resolved"`) || !strings.Contains(string(ev), `"gpu_uuid":"GPU-1"`) {
		t.Errorf("event %s, %v", ev, err)
	}
	if got := Subject(schemas.KindMemoryBound); got != "gpupool.findings.memory_bound" {
		t.Errorf("Subject = %q", got)
	}
}
