package audit

import (
	"slices"
	"testing"
	"time"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func openStore(t *testing.T) *chdb.Store {
	t.Helper()
	s := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	return s
}

// testConfig is the default model with the dev-idle policy live.
func testConfig() scheduler.Config {
	c := scheduler.DefaultConfig()
	c.Policies[0].DryRun = false
	return c
}

// TestStoreRecorder writes rows (twice) and reads them back with each filter.
func TestStoreRecorder(t *testing.T) {
	s := openStore(t)
	r := NewStoreRecorder(s)
	rows := []scheduler.Action{
		{ID: "a1", Time: t0, Decision: scheduler.DecAdmit, Outcome: scheduler.OutcomeOK, Job: "sched/nlp/1", Attempt: 1, Queue: "q",
			Pool: "dev", Team: "nlp", Card: "L40S-48GB", GPUs: 2, Borrowed: 1, Cluster: "c1"},
		{ID: "a2", Time: t0.Add(time.Minute), Decision: scheduler.DecReclaim, Outcome: scheduler.OutcomeDryRun, DryRun: true,
			Policy: "dev-idle", Step: 1, Job: "sched/nlp/1", FindingID: "f1", FindingEpisode: 2, FindingKind: "idle",
			Executor: "sim", Tries: 3, Reason: "it's idle", Details: map[string]string{"for": "x"}},
		{ID: "a3", Time: t0.Add(2 * time.Minute), Decision: scheduler.DecRequeue, Outcome: scheduler.OutcomeOK, Job: "sched/nlp/1/2",
			Pool: "dev", PID: 42, Node: "gpu-a-001"},
		{ID: "a4", Time: t0.Add(3 * time.Minute), Decision: scheduler.DecFinish, Outcome: scheduler.OutcomeOK, Job: "sched/vision/2",
			Pool: "dev", Team: "vision", Actor: "token:vision-ci"},
	}
	for range 2 {
		if err := r.Record(t.Context(), rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Record(t.Context(), rows[:1]); err != nil { // another batch holding a recorded row
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    scheduler.ActionFilter
		want []string
	}{
		{"all", scheduler.ActionFilter{}, []string{"a1", "a2", "a3", "a4"}},
		{"since", scheduler.ActionFilter{Since: t0.Add(time.Minute)}, []string{"a2", "a3", "a4"}},
		{"until", scheduler.ActionFilter{Until: t0.Add(time.Minute)}, []string{"a1"}},
		{"job and its attempts", scheduler.ActionFilter{Job: "sched/nlp/1"}, []string{"a1", "a2", "a3"}},
		{"decision", scheduler.ActionFilter{Decision: scheduler.DecReclaim}, []string{"a2"}},
		{"pool", scheduler.ActionFilter{Pool: "dev"}, []string{"a1", "a3", "a4"}},
		{"team", scheduler.ActionFilter{Team: "vision"}, []string{"a4"}},
		{"policies", scheduler.ActionFilter{PoliciesOnly: true}, []string{"a2"}},
		{"newest", scheduler.ActionFilter{Limit: 2}, []string{"a3", "a4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Actions(t.Context(), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, a := range got {
				ids = append(ids, a.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Fatalf("ids %v, want %v", ids, tt.want)
			}
		})
	}
	got, _ := r.Actions(t.Context(), scheduler.ActionFilter{Decision: scheduler.DecReclaim})
	a := got[0]
	if !a.Time.Equal(t0.Add(time.Minute)) || !a.DryRun || a.Tries != 3 || a.FindingEpisode != 2 || a.Step != 1 ||
		a.Details["for"] != "x" || a.Executor != "sim" || a.Reason != "it's idle" {
		t.Errorf("round trip: %+v", a)
	}
	if got, _ := r.Actions(t.Context(), scheduler.ActionFilter{Team: "vision"}); len(got) != 1 || got[0].Actor != "token:vision-ci" {
		t.Errorf("actor round trip: %+v", got)
	}
}

// TestRestartDoesNotRepeat runs a policy over the store-backed audit trail, then
// a new service on the same store: it must not act on the finding again.
func TestRestartDoesNotRepeat(t *testing.T) {
	s := openStore(t)
	now := t0
	clock := func() time.Time { return now }
	newSvc := func() *scheduler.Service {
		svc, err := scheduler.New(testConfig(), scheduler.WithClock(clock), scheduler.WithRecorder(NewStoreRecorder(s)))
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	svc := newSvc()
	j, err := svc.Submit(t.Context(), scheduler.JobSpec{Team: "nlp", Queue: scheduler.PoolDev, GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := schemas.Finding{ID: "idle-1", Episode: 1, Kind: schemas.KindIdle, Job: j.ID, Pool: scheduler.PoolDev, Since: t0}
	step := func(svc *scheduler.Service) {
		if err := svc.AddFindings(t.Context(), []schemas.Finding{f}); err != nil {
			t.Fatal(err)
		}
		if err := svc.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []time.Duration{0, 30 * time.Minute, 15 * time.Minute} {
		now = now.Add(d)
		step(svc)
	}
	rows, _ := NewStoreRecorder(s).Actions(t.Context(), scheduler.ActionFilter{PoliciesOnly: true})
	if len(rows) != 2 || rows[0].Decision != scheduler.DecNotify || rows[1].Decision != scheduler.DecReclaim {
		t.Fatalf("policy rows: %+v", rows)
	}
	now = now.Add(time.Hour)
	step(newSvc())
	again, _ := NewStoreRecorder(s).Actions(t.Context(), scheduler.ActionFilter{PoliciesOnly: true})
	if len(again) != 2 {
		t.Fatalf("after a restart the policy acted again: %+v", again[2:])
	}
}

// TestStoreFindings reads an open finding, with its job's labels, and leaves out
// a resolved one.
func TestStoreFindings(t *testing.T) {
	s := openStore(t)
	db := s.Database()
	for _, q := range []string{
		`INSERT INTO ` + db + `.findings (id, kind, state, episode, severity, cluster, node, job, team, pool, card, gpu_uuids, pid, since, first_seen, last_seen, updated_at)
		 VALUES ('f1', 'idle', 'open', 1, 'warning', 'c1', 'gpu-a-001', 'k8s/nlp/1', 'nlp', 'dev', 'L40S-48GB', ['GPU-1'], 0,
		 '2026-12-01 09:00:00', '2026-12-01 09:30:00', '2026-12-01 09:35:00', '2026-12-01 09:35:00'),
		 ('f2', 'zombie', 'resolved', 1, 'warning', 'c1', 'gpu-a-002', '', '', '', '', [], 77,
		 '2026-12-01 09:00:00', '2026-12-01 09:10:00', '2026-12-01 09:20:00', '2026-12-01 09:40:00')`,
		`INSERT INTO ` + db + `.job_events (ts, job, event, labels) VALUES ('2026-12-01 08:00:00', 'k8s/nlp/1', 'submit', {'gpupool.io/no-reclaim': 'true'})`,
	} {
		if err := s.Exec(t.Context(), q, nil); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := NewStoreFindings(s).Findings(t.Context(), t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("findings: %+v", fs)
	}
	f := fs[0]
	if f.ID != "f1" || f.Kind != "idle" || f.Job != "k8s/nlp/1" || !f.Since.Equal(t0) || f.Labels["gpupool.io/no-reclaim"] != "true" ||
		len(f.GPUUUIDs) != 1 || f.Episode != 1 {
		t.Errorf("finding %+v", f)
	}
}

// TestBusNotifier sends a notice and reads it back as the alerter would.
func TestBusNotifier(t *testing.T) {
	b := bustest.Start(t)
	n := NewBusNotifier(b.JS)
	notice := schemas.Notice{Time: t0, Team: "nlp", Job: "k8s/nlp/1", Policy: "dev-idle", NextAction: scheduler.ActionReclaim,
		NextAt: t0.Add(15 * time.Minute), Finding: schemas.Finding{ID: "f1", Episode: 2, Kind: "idle", Pool: "dev"}}
	for range 2 { // the second is deduplicated by its message ID
		if err := n.Notify(t.Context(), notice); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := b.JS.Stream(t.Context(), bus.StreamFindings)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("%d messages on the stream, want 1", info.State.Msgs)
	}
	m, err := stream.GetMsg(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := schemas.DecodeFindingMessage(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != bus.AlertsSubject("nlp") || a.Event != schemas.EventNotice || a.Notice == nil || a.Finding.ID != "f1" ||
		a.Finding.Episode != 2 || a.Notice.NextAction != "reclaim" || !a.Notice.NextAt.Equal(t0.Add(15*time.Minute)) || a.Notice.Team != "nlp" {
		t.Errorf("notice on %s: %+v %+v", m.Subject, a, a.Notice)
	}
}
