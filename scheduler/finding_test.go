package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// processIn is a fake executor's answer that every process and job it is asked
// about is in pool, of no team.
func processIn(pool string) func(executor.Target) (executor.Owner, error) {
	return func(executor.Target) (executor.Owner, error) {
		return executor.Owner{Pool: pool, Detail: "fake: in pool " + pool}, nil
	}
}

// ownedBy is a fake executor's answer that every job it is asked about is
// team's, in pool.
func ownedBy(team, pool string) func(executor.Target) (executor.Owner, error) {
	return func(executor.Target) (executor.Owner, error) {
		return executor.Owner{Team: team, Pool: pool, Detail: "fake: team " + team}, nil
	}
}

// TestResolveOrder: a finding's job is resolved from the scheduler's records
// first, then the executor of the job's system, then, for a process, the
// process executor; the team and pool the finding claims are never used, and
// what nothing resolves is unresolved, with the reason. An executor failing to
// answer leaves the finding out of the pass, to be asked about again.
func TestResolveOrder(t *testing.T) {
	notFound := fmt.Errorf("fake: %w", executor.ErrNotFound)
	for _, tc := range []struct {
		name    string
		f       schemas.Finding
		owner   func(executor.Target) (executor.Owner, error)
		want    string // by/team/pool, or "unresolved: <part of why>", or "left out"
		ownJob  bool   // the finding names a job the scheduler runs
		wantJob bool
	}{
		{name: "records before the executor", ownJob: true, f: schemas.Finding{Kind: schemas.KindIdle, Team: "x", Pool: "dev"},
			owner: ownedBy("team-b", "dev"), want: "scheduler/team-a/train", wantJob: true},
		{name: "executor for an external job", f: schemas.Finding{Kind: schemas.KindIdle, Job: "k8s/ml/pod-1", Team: "x", Pool: "dev"},
			owner: ownedBy("team-b", "train"), want: "fake/team-b/train"},
		{name: "executor maps to a queue", f: schemas.Finding{Kind: schemas.KindIdle, Job: "slurm/c1/42", Pool: "dev"},
			owner: func(executor.Target) (executor.Owner, error) { return executor.Owner{Team: "t", Queue: "online"}, nil }, want: "fake/t/infer"},
		{name: "process executor for a jobless zombie", f: schemas.Finding{Kind: schemas.KindZombie, Node: "n1", PID: 7, Pool: "infer"},
			owner: processIn("dev"), want: "fake//dev"},
		{name: "process executor once the job's is not found", f: schemas.Finding{Kind: schemas.KindZombie, Job: "k8s/ml/gone", Node: "n1", PID: 7},
			owner: func(t executor.Target) (executor.Owner, error) {
				if t.PID == 0 {
					return executor.Owner{}, notFound
				}
				return executor.Owner{Pool: "train"}, nil
			}, want: "fake//train"},
		{name: "executor for a job started by hand, named by its key alone", f: schemas.Finding{Kind: schemas.KindIdle, Job: "proc/n1/7/1796527055", Node: "n1", Pool: "x"},
			owner: func(t executor.Target) (executor.Owner, error) {
				if t.Job != "proc/n1/7/1796527055" || t.Source != schemas.SourceProcess {
					return executor.Owner{}, notFound
				}
				return executor.Owner{Team: "t", Pool: "dev"}, nil
			}, want: "fake/t/dev"},
		{name: "a team with no pool is no answer", f: schemas.Finding{Kind: schemas.KindIdle, Job: "k8s/ml/pod-1", Pool: "dev"},
			owner: ownedBy("team-b", ""), want: "unresolved: no queue or pool"},
		{name: "a queue the model lacks is no answer", f: schemas.Finding{Kind: schemas.KindIdle, Job: "k8s/ml/pod-1", Pool: "dev"},
			owner: func(executor.Target) (executor.Owner, error) { return executor.Owner{Team: "t", Queue: "nope"}, nil }, want: "unresolved: queue \"nope\""},
		{name: "not found", f: schemas.Finding{Kind: schemas.KindIdle, Job: "k8s/ml/pod-1", Pool: "dev"},
			owner: nil, want: "unresolved: target not found"},
		{name: "unmapped", f: schemas.Finding{Kind: schemas.KindIdle, Job: "k8s/ml/pod-1", Pool: "dev"},
			owner: func(executor.Target) (executor.Owner, error) { return executor.Owner{}, executor.ErrUnmapped }, want: "unresolved: not in the configured mapping"},
		{name: "no job, no process", f: schemas.Finding{Kind: schemas.KindIdle, Pool: "dev"}, owner: ownedBy("t", "dev"),
			want: "unresolved: names no job and no process"},
		{name: "a scheduler key it does not have", f: schemas.Finding{Kind: schemas.KindIdle, Job: "sched/x/99", Pool: "dev"}, owner: ownedBy("t", "dev"),
			want: "unresolved: not one of the scheduler's"},
		{name: "executor failing: asked again later", f: schemas.Finding{Kind: schemas.KindIdle, Job: "k8s/ml/pod-1", Pool: "dev"},
			owner: func(executor.Target) (executor.Owner, error) {
				return executor.Owner{}, errors.New("connection refused")
			}, want: "left out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testConfig())
			h.exec.owner = tc.owner
			f := tc.f
			f.ID, f.Episode, f.Since = "f1", 1, t0.Add(-48*time.Hour)
			if tc.ownJob {
				j := h.submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB"})
				f.Job = j.ID
			}
			seen := h.svc.seeFindings(t.Context(), []schemas.Finding{f}, t0)
			var got string
			switch {
			case len(seen) == 0:
				got = "left out"
			case !seen[0].res.ok:
				got = "unresolved: " + seen[0].res.why
			default:
				r := seen[0].res
				got = r.by + "/" + r.team + "/" + r.pool
				if (r.jobID != "") != tc.wantJob {
					t.Errorf("job %q, want one: %v", r.jobID, tc.wantJob)
				}
			}
			if got != tc.want && !(strings.HasPrefix(tc.want, "unresolved: ") && strings.HasPrefix(got, "unresolved: ") &&
				strings.Contains(got, strings.TrimPrefix(tc.want, "unresolved: "))) {
				t.Fatalf("resolved as %q, want %q", got, tc.want)
			}
			if len(seen) > 0 && !seen[0].start.Equal(t0) {
				t.Errorf("policy delays count from %s, want t0, when the scheduler first saw it (not the claimed since)", seen[0].start)
			}
		})
	}
}

// TestFirstSeenIsTheSchedulers: a finding's delays count from the pass that
// first saw it, kept while it stays open, never from an earlier claimed since;
// a since later than that is kept (the analyzer may be more cautious, never
// less); an occurrence gone from a pass is forgotten and, back, seen anew.
func TestFirstSeenIsTheSchedulers(t *testing.T) {
	h := newHarness(t, testConfig())
	h.exec.owner = processIn("dev")
	z := schemas.Finding{ID: "z", Episode: 1, Kind: schemas.KindZombie, Node: "n1", PID: 9, Since: t0.Add(-time.Hour)}
	later := schemas.Finding{ID: "late", Episode: 1, Kind: schemas.KindZombie, Node: "n1", PID: 10, Since: t0.Add(time.Hour)}
	start := func(now time.Time, fs ...schemas.Finding) map[string]time.Time {
		out := map[string]time.Time{}
		for _, sf := range h.svc.seeFindings(t.Context(), fs, now) {
			out[sf.f.ID] = sf.start
		}
		return out
	}
	if got := start(t0, z, later); !got["z"].Equal(t0) || !got["late"].Equal(t0.Add(time.Hour)) {
		t.Fatalf("first pass: %v", got)
	}
	if got := start(t0.Add(10*time.Minute), z); !got["z"].Equal(t0) {
		t.Fatalf("second pass: z from %s, want t0", got["z"])
	}
	if got := start(t0.Add(20*time.Minute), later); len(got) != 1 {
		t.Fatalf("third pass: %v", got)
	}
	if got := start(t0.Add(30*time.Minute), z); !got["z"].Equal(t0.Add(30 * time.Minute)) {
		t.Fatalf("z back after a pass without it: from %s, want seen anew", got["z"])
	}
}
