package scheduler

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// filesState is the state a restart reads from the job state file at path and
// its journal.
func filesState(t *testing.T, path string) savedState {
	t.Helper()
	st, _, err := readState(path)
	if err != nil {
		t.Fatal(err)
	}
	lines, _, torn, err := readJournal(journalPath(path))
	if err != nil || torn != "" {
		t.Fatalf("journal: %v %s", err, torn)
	}
	return replay(st, lines)
}

func liveState(h *harness) savedState {
	h.svc.mu.Lock()
	defer h.svc.mu.Unlock()
	return savedState{Version: stateVersion, Seq: h.svc.engine.Seq(), Jobs: h.svc.engine.Saved()}
}

// restarted is st without what a restart recomputes at its first pass: why
// queued jobs wait.
func restarted(st savedState) savedState {
	st.Jobs = slices.Clone(st.Jobs)
	for i := range st.Jobs {
		st.Jobs[i].WaitReason = ""
	}
	return st
}

// sameJobs fails unless a and b hold the same jobs, field for field, and the
// same last place in line.
func sameJobs(t *testing.T, what string, a, b savedState) {
	t.Helper()
	ja, _ := json.Marshal(a.Jobs)
	jb, _ := json.Marshal(b.Jobs)
	if string(ja) != string(jb) || a.Seq != b.Seq {
		t.Errorf("%s: seq %d vs %d, jobs:\n%s\nvs\n%s", what, a.Seq, b.Seq, ja, jb)
	}
}

// copyState copies the state file and its journal to a new directory: what a
// kill -9 at this instant leaves on disk.
func copyState(t *testing.T, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "jobs.json")
	for _, p := range []string{path, journalPath(path)} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(strings.Replace(p, path, dst, 1), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// journalScenario submits, admits, reclaims and finishes jobs, leaving queued,
// running and reclaiming ones.
func journalScenario(h *harness) {
	h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 8, Card: "H100-80GB", Checkpointable: true})
	h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 4, Card: "L40S-48GB"})
	d2 := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 4, Card: "L40S-48GB", PriorityClass: "low"})
	h.pass()
	h.clock.advance(time.Minute)
	h.submit(JobSpec{Team: "team-b", Queue: "b", GPUs: 2, Card: "H100-80GB", Labels: map[string]string{"k": "v"}})
	h.pass()
	if _, err := h.svc.Finish(h.t.Context(), d2.ID, schemas.StatusCancelled); err != nil {
		h.t.Fatal(err)
	}
	h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1})
}

// TestJournalKeepsEveryChange: after every submit, pass and finish, the state
// file and its journal together hold exactly the engine's jobs, and submits
// append to the journal without rewriting the state file.
func TestJournalKeepsEveryChange(t *testing.T) {
	state := filepath.Join(t.TempDir(), "jobs.json")
	h := newHarness(t, testConfig(), WithStateFile(state))
	h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1})
	snap, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	sameJobs(t, "after the first submit", filesState(t, state), liveState(h))
	journalScenario(h)
	sameJobs(t, "after the scenario", filesState(t, state), liveState(h))
	if now, _ := os.ReadFile(state); string(now) != string(snap) {
		t.Error("the state file was rewritten: submits and passes should only append to the journal")
	}
	lines, _, _, _ := readJournal(journalPath(state))
	if len(lines) < 6 {
		t.Errorf("%d journal lines after 6 submits, 3 passes and a finish", len(lines))
	}
	single := 0
	for _, l := range lines {
		if len(l.Jobs)+len(l.Gone) == 1 {
			single++
		}
	}
	if single < 6 {
		t.Errorf("%d journal lines of one job, want one per submit (6): a line holds only the jobs changed", single)
	}
}

// TestJournalCrashPoints: a scheduler killed at any point of saving restarts
// with the state it had: between a journal append and the next snapshot (the
// journal replayed), between a compaction's snapshot and its emptying of the
// journal (the older lines skipped, though the snapshot holds changes they
// lack), and during an append (the torn line ignored, the lines before it
// kept). A bad line with good ones after it is refused.
func TestJournalCrashPoints(t *testing.T) {
	state := filepath.Join(t.TempDir(), "jobs.json")
	h := newHarness(t, testConfig(), WithStateFile(state))
	journalScenario(h)
	want := liveState(h)

	restart := func(path string) *harness {
		t.Helper()
		h2 := &harness{t: t, clock: h.clock, rec: NewMemoryRecorder(), pub: &MemoryPublisher{}, note: &MemoryNotifier{}, exec: &fakeExec{}}
		h2.start(testConfig(), WithStateFile(path))
		return h2
	}
	t.Run("after a journal append", func(t *testing.T) {
		cp := copyState(t, state)
		sameJobs(t, "restarted", restarted(liveState(restart(cp))), restarted(want))
		// Compacted at start: what may follow is the marker of the restored job
		// events published (outbox.go), no change.
		raw, err := os.ReadFile(journalPath(cp))
		if err != nil {
			t.Fatal(err)
		}
		for l := range strings.Lines(string(raw)) {
			var line journalLine
			if err := json.Unmarshal([]byte(l), &line); err != nil || len(line.Jobs) > 0 || len(line.Gone) > 0 || len(line.Outbox) > 0 {
				t.Errorf("journal not compacted at start: line %q (%v)", l, err)
			}
		}
	})
	t.Run("between a compaction's snapshot and its journal reset", func(t *testing.T) {
		old, err := os.ReadFile(journalPath(state))
		if err != nil {
			t.Fatal(err)
		}
		h3 := restart(copyState(t, state))
		cp := h3.svc.statePath
		h3.clock.advance(10 * time.Minute) // a1's grace ends: it is requeued, b1 admitted
		h3.pass()
		h3.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 2})
		h3.svc.saveMu.Lock()
		if err := h3.svc.compact(); err != nil {
			t.Fatal(err)
		}
		h3.svc.saveMu.Unlock()
		after := liveState(h3)
		// The journal before the compaction, as if it had not been emptied; its
		// lines would take the jobs back to before the pass.
		var stale []byte
		for _, l := range strings.SplitAfter(string(old), "\n") {
			var jl journalLine
			if json.Unmarshal([]byte(l), &jl) == nil {
				jl.Gen = h3.svc.gen - 1
				b, _ := json.Marshal(jl)
				stale = append(append(stale, b...), '\n')
			}
		}
		if err := os.WriteFile(journalPath(cp), stale, 0o644); err != nil {
			t.Fatal(err)
		}
		sameJobs(t, "restarted", restarted(liveState(restart(cp))), restarted(after))
	})
	t.Run("torn last line", func(t *testing.T) {
		cp := copyState(t, state)
		f, err := os.OpenFile(journalPath(cp), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString(`{"gen":1,"seq":99,"jobs":[{"id":"sched/x/`)
		_ = f.Close()
		h4 := restart(cp)
		sameJobs(t, "restarted", restarted(liveState(h4)), restarted(want))
		n := h4.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1})
		h5 := restart(cp)
		if _, err := h5.svc.Job(n.ID); err != nil {
			t.Errorf("job submitted after the torn line is lost: %v", err)
		}
	})
	t.Run("bad line before good ones", func(t *testing.T) {
		cp := copyState(t, state)
		data, _ := os.ReadFile(journalPath(cp))
		if err := os.WriteFile(journalPath(cp), append([]byte("garbage\n"), data...), 0o644); err != nil {
			t.Fatal(err)
		}
		svc, err := New(testConfig(), WithStateFile(cp))
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("Start with a corrupt journal: %v, want an error naming line 1", err)
		}
	})
}

// TestJournalCompacts: the journal is folded into the state file once it has
// grown past it (and minCompactBytes), so that it never grows without bound.
func TestJournalCompacts(t *testing.T) {
	state := filepath.Join(t.TempDir(), "jobs.json")
	h := newHarness(t, testConfig(), WithStateFile(state))
	var ids []string
	var last int64
	for i := 0; ; i++ {
		j := h.submit(JobSpec{Team: "x", Queue: "dev", GPUs: 1, Name: strings.Repeat("n", 200)})
		ids = append(ids, j.ID)
		fi, err := os.Stat(journalPath(state))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() < last { // emptied, and maybe a line since (the events' published marker)
			break
		}
		last = fi.Size()
		if fi.Size() > 2*minCompactBytes || i > 5000 {
			t.Fatalf("journal of %d bytes after %d submits was never compacted", fi.Size(), i+1)
		}
	}
	sameJobs(t, "after compaction", filesState(t, state), liveState(h))
	if got := len(filesState(t, state).Jobs); got != len(ids) {
		t.Errorf("%d jobs in the files, %d submitted", got, len(ids))
	}
}
