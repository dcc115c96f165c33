package billing

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// findingVersion is one row of the findings table: one version of one episode.
type findingVersion struct {
	id, state, since, firstSeen, lastSeen, resolvedAt, updatedAt string
	episode                                                      int
	waste                                                        float64
}

// TestFindingsOfPastPeriod runs November's report on 2026-12-01, after findings
// have moved on: an episode resolved since is still listed (open at the period's
// end), one resolved within the period is listed as resolved, and episodes wholly
// before or after the period are not. Each version is its own insert, so the
// table is unmerged and only argMax picks the latest version.
func TestFindingsOfPastPeriod(t *testing.T) {
	ctx := t.Context()
	s := chdbtest.Open(t)
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	versions := []findingVersion{
		// resolved-after: open 11-20, last seen in December, resolved 12-01 00:20.
		{"resolved-after", "open", "2026-11-20 09:30:00", "2026-11-20 10:00:00", "2026-11-20 10:00:00", "", "2026-11-20 10:00:00", 1, 0.5},
		{"resolved-after", "updated", "2026-11-20 09:30:00", "2026-11-20 10:00:00", "2026-12-01 00:05:00", "", "2026-12-01 00:05:00", 1, 254.583},
		{"resolved-after", "resolved", "2026-11-20 09:30:00", "2026-11-20 10:00:00", "2026-12-01 00:05:00", "2026-12-01 00:20:00", "2026-12-01 00:20:00", 1, 254.583},
		// opened-after: the condition starts and is seen in December only.
		{"opened-after", "open", "2026-12-01 02:00:00", "2026-12-01 02:10:00", "2026-12-01 02:10:00", "", "2026-12-01 02:10:00", 1, 0.167},
		// came-back: episode 1 wholly in October, episode 2 resolved within November.
		{"came-back", "open", "2026-10-20 08:00:00", "2026-10-20 08:30:00", "2026-10-20 08:30:00", "", "2026-10-20 08:30:00", 1, 0.5},
		{"came-back", "resolved", "2026-10-20 08:00:00", "2026-10-20 08:30:00", "2026-10-25 08:00:00", "2026-10-25 08:30:00", "2026-10-25 08:30:00", 1, 120},
		{"came-back", "open", "2026-11-10 08:00:00", "2026-11-10 08:30:00", "2026-11-10 08:30:00", "", "2026-11-10 08:30:00", 2, 0.5},
		{"came-back", "resolved", "2026-11-10 08:00:00", "2026-11-10 08:30:00", "2026-11-12 08:00:00", "2026-11-12 08:30:00", "2026-11-12 08:30:00", 2, 48},
		// started-in: the condition began before the period ended but was first seen
		// after it (since is its estimated start).
		{"started-in", "open", "2026-11-30 23:00:00", "2026-12-01 00:30:00", "2026-12-01 00:30:00", "", "2026-12-01 00:30:00", 1, 1.5},
		// resolved-before: seen until 10-31 23:00, resolved before November began.
		{"resolved-before", "open", "2026-10-30 08:00:00", "2026-10-30 08:30:00", "2026-10-30 08:30:00", "", "2026-10-30 08:30:00", 1, 0.5},
		{"resolved-before", "resolved", "2026-10-30 08:00:00", "2026-10-30 08:30:00", "2026-10-31 23:00:00", "2026-10-31 23:30:00", "2026-10-31 23:30:00", 1, 39},
	}
	for _, v := range versions {
		insertFindingVersion(ctx, t, s, v)
	}

	r, err := Build(ctx, s, november(t))
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		state    string
		episode  int64
		waste    float64
		resolved string
	}
	want := map[string]got{
		"resolved-after": {"open", 1, 254.583, "2026-12-01 00:20"},
		"came-back":      {"resolved", 2, 48, "2026-11-12 08:30"},
		"started-in":     {"open", 1, 1.5, ""},
	}
	var order []string
	for _, f := range r.Findings {
		order = append(order, f.ID)
		w, ok := want[f.ID]
		if !ok {
			t.Errorf("finding %s episode %d listed, but it did not overlap November", f.ID, f.Episode)
			continue
		}
		res := ""
		if f.ResolvedAt != nil {
			res = f.ResolvedAt.Format("2006-01-02 15:04")
		}
		if g := (got{f.State, f.Episode, f.WasteGPUHours, res}); g != w {
			t.Errorf("finding %s: got %+v, want %+v", f.ID, g, w)
		}
		if f.Team != "nlp" || f.Card != "H100-80GB" || f.GPUs != 2 || len(f.GPUUUIDs) != 2 || !near(f.WasteCost, f.WasteGPUHours*4.5) {
			t.Errorf("finding %s: owner, card, GPUs or cost wrong: %+v", f.ID, f)
		}
		delete(want, f.ID)
	}
	for id := range want {
		t.Errorf("finding %s not listed (listed: %v)", id, order)
	}
	if len(order) == 3 && (order[0] != "resolved-after" || order[1] != "came-back") {
		t.Errorf("findings not ordered by waste: %v", order)
	}

	// The period's part of each episode: its share of the episode's time inside
	// November (resolved-after ran 254.583 h from 11-20 09:30, 254.5 h of them in
	// November; started-in 1 h of its 1.5 h), and December's parts complete them.
	wantPeriod := map[string]float64{"resolved-after": 254.583 * 254.5 / (254 + 35.0/60), "came-back": 48, "started-in": 1}
	november := map[string]float64{}
	for _, f := range r.Findings {
		november[f.ID] = f.PeriodWasteGPUHours
		if w := wantPeriod[f.ID]; !near(f.PeriodWasteGPUHours, w) || !near(f.PeriodWasteCost, w*4.5) {
			t.Errorf("finding %s: November's part %g GPU-h (%g USD), want %g", f.ID, f.PeriodWasteGPUHours, f.PeriodWasteCost, w)
		}
	}
	dec, err := reports.ParsePeriod("2026-12", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := Build(ctx, s, dec)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rd.Findings {
		if whole, ok := map[string]float64{"resolved-after": 254.583, "started-in": 1.5, "opened-after": 0.167}[f.ID]; !ok {
			t.Errorf("December lists %s", f.ID)
		} else if !near(november[f.ID]+f.PeriodWasteGPUHours, whole) {
			t.Errorf("finding %s: November's %g + December's %g GPU-h, want the episode's %g", f.ID, november[f.ID], f.PeriodWasteGPUHours, whole)
		}
	}
}

// insertFindingVersion writes v as its own insert (its own part), with the test's
// constant owner: nlp/chat job k8s/nlp/train on two H100s, priced at 4.50.
func insertFindingVersion(ctx context.Context, t *testing.T, s store.Store, v findingVersion) {
	t.Helper()
	const insertSQL = `INSERT INTO findings (id, kind, state, episode, severity, cluster, node, job, team, project,
    pool, card, gpu_uuids, since, first_seen, last_seen, resolved_at, updated_at, waste_gpu_hours, waste_cost,
    currency, evidence, recommendation)
SELECT {id:String}, 'idle', {state:String}, {episode:UInt32}, 'warning', 'c1', 'node-1', 'k8s/nlp/train', 'nlp', 'chat',
    'training-prod', 'H100-80GB', ['GPU-h1', 'GPU-h2'], {since:DateTime64(3, 'UTC')}, {first_seen:DateTime64(3, 'UTC')},
    {last_seen:DateTime64(3, 'UTC')}, {resolved_at:Nullable(DateTime64(3, 'UTC'))}, {updated_at:DateTime64(3, 'UTC')},
    {waste:Float64}, {waste:Float64} * 4.5, 'USD', map('gpus', 2., 'window_minutes', 30.), 'release the GPUs'`
	p := store.Params{"id": v.id, "state": v.state, "episode": strconv.Itoa(v.episode), "since": v.since,
		"first_seen": v.firstSeen, "last_seen": v.lastSeen, "resolved_at": v.resolvedAt, "updated_at": v.updatedAt,
		"waste": strconv.FormatFloat(v.waste, 'f', -1, 64)}
	if v.resolvedAt == "" {
		p["resolved_at"] = `\N`
	}
	if err := s.Exec(ctx, insertSQL, p); err != nil {
		t.Fatalf("insert finding %s version %s: %v", v.id, v.updatedAt, err)
	}
}
