package scheduler

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func asActor(ctx context.Context, actor string) context.Context { return ContextWithActor(ctx, actor) }

// TestIdempotentSubmit: a retry with the same key and spec by the same caller
// returns the first job; another spec is refused; a key is forgotten after its
// time and past the bound on keys; bad keys are refused. With and without a
// job state file.
func TestIdempotentSubmit(t *testing.T) {
	spec := JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB"}
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprintf("persistent=%v", persistent), func(t *testing.T) {
			// The bounds come from the configuration (scheduler.idempotency), or
			// from the option.
			cfg := testConfig()
			var opts []Option
			if persistent {
				opts = append(opts, WithStateFile(filepath.Join(t.TempDir(), "jobs.json")), WithIdempotency(time.Hour, 3))
			} else {
				cfg.Idempotency = IdempotencyConfig{TTL: time.Hour, MaxKeys: 3}
			}
			h := newHarness(t, cfg, opts...)
			ctx := asActor(t.Context(), "token:alice")
			first, replayed, err := h.svc.SubmitOnce(ctx, spec, "k1")
			if err != nil || replayed {
				t.Fatalf("first submit: %v replayed=%v", err, replayed)
			}
			again, replayed, err := h.svc.SubmitOnce(ctx, spec, "k1")
			if err != nil || !replayed || again.ID != first.ID {
				t.Fatalf("retry: job %s replayed=%v err=%v, want job %s replayed", again.ID, replayed, err, first.ID)
			}
			other := spec
			other.GPUs = 2
			if _, _, err := h.svc.SubmitOnce(ctx, other, "k1"); !errors.Is(err, ErrIdempotencyMismatch) || !strings.Contains(err.Error(), first.ID) {
				t.Errorf("same key, other spec: %v, want ErrIdempotencyMismatch naming %s", err, first.ID)
			}
			for _, bad := range []string{strings.Repeat("k", MaxIdempotencyKeyLen+1), "has space", "nul\x00", "é"} {
				if _, _, err := h.svc.SubmitOnce(ctx, spec, bad); !errors.Is(err, ErrBadIdempotencyKey) {
					t.Errorf("key %q: %v, want ErrBadIdempotencyKey", bad, err)
				}
			}
			if n := len(h.svc.Jobs(JobFilter{})); n != 1 {
				t.Errorf("%d jobs after a submit and its retries, want 1", n)
			}
			// Past the bound on keys (3), the oldest is forgotten.
			for i := range 3 {
				if _, _, err := h.svc.SubmitOnce(ctx, spec, fmt.Sprint("n", i)); err != nil {
					t.Fatal(err)
				}
			}
			if j, replayed, _ := h.svc.SubmitOnce(ctx, spec, "k1"); replayed || j.ID == first.ID {
				t.Errorf("k1 still remembered past the bound of 3 keys: %s", j.ID)
			}
			// Past the ttl (an hour), every key is forgotten.
			j2, _, _ := h.svc.SubmitOnce(ctx, spec, "n2")
			h.clock.advance(time.Hour)
			if j, replayed, _ := h.svc.SubmitOnce(ctx, spec, "n2"); replayed || j.ID == j2.ID {
				t.Errorf("n2 still remembered after its ttl: %s", j.ID)
			}
		})
	}
}

// TestAttackIdempotencyKeyOfAnotherCaller: a caller who sends another caller's
// key (guessed, or seen in a log) gets a job of its own, never the other's, and
// no error that tells it the key is in use.
func TestAttackIdempotencyKeyOfAnotherCaller(t *testing.T) {
	h := newHarness(t, testConfig(), WithStateFile(filepath.Join(t.TempDir(), "jobs.json")))
	spec := JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB"}
	alice, _, err := h.svc.SubmitOnce(asActor(t.Context(), "token:alice"), spec, "shared-key")
	if err != nil {
		t.Fatal(err)
	}
	mctx := asActor(t.Context(), "token:mallory")
	mallory, replayed, err := h.svc.SubmitOnce(mctx, spec, "shared-key")
	if err != nil || replayed || mallory.ID == alice.ID {
		t.Fatalf("mallory with alice's key: job %s replayed=%v err=%v; alice's job is %s", mallory.ID, replayed, err, alice.ID)
	}
	if again, replayed, err := h.svc.SubmitOnce(mctx, spec, "shared-key"); err != nil || !replayed || again.ID != mallory.ID {
		t.Errorf("mallory's retry: %s replayed=%v err=%v, want her own %s", again.ID, replayed, err, mallory.ID)
	}
	other := JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB"}
	if _, _, err := h.svc.SubmitOnce(mctx, other, "shared-key"); !errors.Is(err, ErrIdempotencyMismatch) || strings.Contains(err.Error(), alice.ID) {
		t.Errorf("mallory's key with another spec: %v, want a mismatch against her own job, never naming alice's %s", err, alice.ID)
	}
	if j, replayed, err := h.svc.SubmitOnce(asActor(t.Context(), "token:alice"), spec, "shared-key"); err != nil || !replayed || j.ID != alice.ID {
		t.Errorf("alice's retry after mallory used her key: %s replayed=%v err=%v, want %s", j.ID, replayed, err, alice.ID)
	}
}

// TestIdempotencyAndAuditSurviveRestart: a key and the submit's audit row are
// in the state on disk when Submit returns: a restart over a recorder that never
// got the row (it failed) records it, and the retry returns the first job.
func TestIdempotencyAndAuditSurviveRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "jobs.json")
	failing := &failingRecorder{}
	h := newHarness(t, testConfig(), WithStateFile(state), WithRecorder(failing))
	spec := JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB"}
	ctx := asActor(t.Context(), "token:alice")
	first, _, err := h.svc.SubmitOnce(ctx, spec, "k1")
	if err != nil {
		t.Fatal(err)
	}
	h2 := &harness{t: t, clock: h.clock, rec: NewMemoryRecorder(), pub: &MemoryPublisher{}, note: &MemoryNotifier{}, exec: &fakeExec{}}
	h2.start(testConfig(), WithStateFile(state))
	rows, _ := h2.rec.Actions(t.Context(), ActionFilter{Decision: DecSubmit})
	if len(rows) != 1 || rows[0].Job != first.AttemptKey() || rows[0].Actor != "token:alice" {
		t.Fatalf("submit rows after restart: %+v, want one for %s by token:alice", rows, first.ID)
	}
	again, replayed, err := h2.svc.SubmitOnce(ctx, spec, "k1")
	if err != nil || !replayed || again.ID != first.ID {
		t.Fatalf("retry after restart: %s replayed=%v err=%v, want %s", again.ID, replayed, err, first.ID)
	}
	if n := len(h2.svc.Jobs(JobFilter{})); n != 1 {
		t.Errorf("%d jobs, want 1", n)
	}
}

// failingRecorder refuses every row.
type failingRecorder struct{}

func (failingRecorder) Record(context.Context, []Action) error { return errors.New("store down") }
func (failingRecorder) Actions(context.Context, ActionFilter) ([]Action, error) {
	return nil, nil
}

// TestGroupCommitDurable: submits from many goroutines at once share journal
// lines, and every one acknowledged is on disk (the journal reopened) with its
// audit row and key.
func TestGroupCommitDurable(t *testing.T) {
	state := filepath.Join(t.TempDir(), "jobs.json")
	svc, err := New(testConfig(), WithStateFile(state), WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	const clients, each = 8, 25
	var mu sync.Mutex
	acked := map[string]string{} // key → job
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			ctx := asActor(t.Context(), fmt.Sprint("token:c", c))
			for i := range each {
				key := fmt.Sprint("c", c, "-", i)
				j, _, err := svc.SubmitOnce(ctx, JobSpec{Team: "x", Queue: "dev", GPUs: 1, Name: key}, key)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[key] = j.ID
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	st, _, err := readState(state)
	if err != nil {
		t.Fatal(err)
	}
	lines, _, torn, err := readJournal(journalPath(state))
	if err != nil || torn != "" {
		t.Fatal(err, torn)
	}
	st = replay(st, lines)
	jobs, rows, keys := map[string]bool{}, map[string]string{}, map[string]string{}
	for _, j := range st.Jobs {
		jobs[j.ID] = true
	}
	for _, a := range st.Audit {
		rows[a.Job] = a.Actor
	}
	for _, e := range st.Idem {
		keys[e.Key] = e.Job
	}
	for key, id := range acked {
		actor := "token:c" + strings.Split(strings.TrimPrefix(key, "c"), "-")[0]
		if !jobs[id] || rows[id+"/1"] != actor && rows[id] != actor || keys[key] != id {
			t.Errorf("acknowledged %s (key %s): on disk job=%v audit actor=%q key→%q", id, key, jobs[id], rows[id+"/1"]+rows[id], keys[key])
		}
	}
	if len(acked) != clients*each || len(st.Jobs) != clients*each {
		t.Errorf("%d acknowledged, %d jobs on disk, want %d", len(acked), len(st.Jobs), clients*each)
	}
	if len(lines) > clients*each {
		t.Errorf("%d journal lines for %d submits", len(lines), clients*each)
	}
	t.Logf("%d submits from %d goroutines in %d journal lines", clients*each, clients, len(lines))
	recorded, _ := svc.Actions(t.Context(), ActionFilter{Decision: DecSubmit})
	ids := make([]string, 0, len(recorded))
	for _, a := range recorded {
		ids = append(ids, a.Job)
	}
	slices.Sort(ids)
	if len(slices.Compact(ids)) != clients*each {
		t.Errorf("%d submit rows recorded, want %d", len(ids), clients*each)
	}
}
