package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
)

// heldServer is a scheduler whose dev jobs sched/nlp/1 and sched/vision/2 were
// reclaimed idle by the dev-idle policy and are held, its API behind the test
// tokens.
func heldServer(t *testing.T) (*httptest.Server, *scheduler.Service) {
	t.Helper()
	cfg := scheduler.DefaultConfig()
	cfg.Policies[0].DryRun = false // dev-idle reclaims
	now := t0
	svc, err := scheduler.New(cfg, scheduler.WithClock(func() time.Time { return now }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	ctx := scheduler.ContextWithActor(t.Context(), "token:setup")
	var fs []schemas.Finding
	for _, team := range []string{"nlp", "vision"} {
		j, err := svc.Submit(ctx, scheduler.JobSpec{Team: team, Queue: "dev", GPUs: 1, Workload: schemas.WorkloadDev})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, schemas.Finding{ID: "idle-" + j.ID, Episode: 1, Kind: schemas.KindIdle, Job: j.ID, Team: team, Pool: "dev", Since: t0})
	}
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := svc.AddFindings(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{30 * time.Minute, 15 * time.Minute, time.Minute} {
		now = now.Add(d)
		if err := svc.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"sched/nlp/1", "sched/vision/2"} {
		if j, _ := svc.Job(id); !j.Held || j.State != scheduler.StateQueued {
			t.Fatalf("%s after its reclaim: %s, held %v", id, j.State, j.Held)
		}
	}
	srv := httptest.NewServer(NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	return srv, svc
}

// TestResumeAuthz: a team resumes its own held job (recorded with it as the
// actor), not another team's (404, as for no job: a team cannot tell another's
// job ID is taken); finance, the analyzer and an agent may not resume any, nor
// may a caller without a token; a job not held is a conflict.
func TestResumeAuthz(t *testing.T) {
	for _, c := range []struct {
		name, caller, job string
		status            int
	}{
		{"own team", "nlp", "sched/nlp/1", http.StatusOK},
		{"operator", "ops", "sched/vision/2", http.StatusOK},
		{"another team", "nlp", "sched/vision/2", http.StatusNotFound},
		{"finance", "finance", "sched/nlp/1", http.StatusForbidden},
		{"analyzer", "analyzer", "sched/nlp/1", http.StatusForbidden},
		{"agent", "agent", "sched/nlp/1", http.StatusForbidden},
		{"no token", "", "sched/nlp/1", http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, svc := heldServer(t)
			status, code, body := call(t, srv, c.caller, request{method: "POST", path: "/v1/resume/" + c.job})
			if status != c.status {
				t.Fatalf("%d %q %s, want %d", status, code, body, c.status)
			}
			j, _ := svc.Job(c.job)
			if j.Held == (status == http.StatusOK) {
				t.Errorf("%s held %v after a %d", c.job, j.Held, status)
			}
			rows, _ := svc.Actions(t.Context(), scheduler.ActionFilter{Decision: scheduler.DecResume})
			if (len(rows) == 1) != (status == http.StatusOK) || len(rows) == 1 && rows[0].Actor != "token:"+c.caller {
				t.Errorf("resume rows %+v", rows)
			}
			if status == http.StatusOK {
				if again, code, _ := call(t, srv, c.caller, request{method: "POST", path: "/v1/resume/" + c.job}); again != http.StatusConflict {
					t.Errorf("resuming it again: %d %q, want 409", again, code)
				}
			}
		})
	}
}

// TestClientResume: the client's Resume reaches the endpoint, job IDs with
// slashes included, and says why when the job is not held.
func TestClientResume(t *testing.T) {
	srv, _ := heldServer(t)
	c, err := NewClient(srv.URL, srv.Client(), WithToken("tok-nlp"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.Resume(t.Context(), "sched/nlp/1")
	if err != nil || j.Held || j.ID != "sched/nlp/1" {
		t.Fatalf("Resume: %+v, %v", j, err)
	}
	if _, err := c.Resume(t.Context(), "sched/nlp/1"); err == nil || !strings.Contains(err.Error(), "not held") {
		t.Errorf("resuming it again: %v", err)
	}
}
