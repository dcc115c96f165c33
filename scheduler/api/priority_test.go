package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
)

// priorityServer is the default scheduler behind the test tokens, with queue
// training-prod letting teams use production, normal and low, and queue
// inference-batch defaulting to low (so teams may use low and best-effort
// there).
func priorityServer(t *testing.T) (*httptest.Server, *scheduler.Service) {
	t.Helper()
	cfg := scheduler.DefaultConfig()
	for i, q := range cfg.Queues {
		switch q.Name {
		case scheduler.PoolTrainingProd:
			cfg.Queues[i].PriorityClasses = []string{"production", "normal", "low"}
		case scheduler.PoolInferenceBatch:
			cfg.Queues[i].DefaultPriorityClass = "low"
		}
	}
	svc, err := scheduler.New(cfg, scheduler.WithClock(func() time.Time { return t0 }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	return srv, svc
}

// TestAttackTeamPriorityAboveQueue: a team token may not submit above what its
// queue allows teams — over the queue's default class, or outside the queue's
// priority_classes — so it cannot jump ahead of or preempt other teams' work.
// The refusal is 403 naming the classes it may use, and no job is queued.
func TestAttackTeamPriorityAboveQueue(t *testing.T) {
	srv, svc := priorityServer(t)
	for _, tc := range []struct {
		name, body, may string
	}{
		{"critical over the model's default", `{"team":"nlp","queue":"dev","gpus":1,"priority_class":"critical"}`,
			"a team may use normal, low, best-effort there (the classes up to its default, normal)"},
		{"production over the model's default", `{"team":"nlp","queue":"training-exp","gpus":1,"priority_class":"production"}`,
			"a team may use normal, low, best-effort there"},
		{"normal over the queue's default", `{"team":"nlp","queue":"inference-batch","gpus":1,"priority_class":"normal"}`,
			"a team may use low, best-effort there (the classes up to its default, low)"},
		{"critical outside the queue's list", `{"team":"nlp","queue":"training-prod","gpus":1,"priority_class":"critical"}`,
			"a team may use production, normal, low there (its priority_classes)"},
		{"below but outside the queue's list", `{"team":"nlp","queue":"training-prod","gpus":1,"priority_class":"best-effort"}`,
			"a team may use production, normal, low there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code, body := call(t, srv, "nlp", request{method: "POST", path: "/v1/jobs", body: tc.body})
			if status != http.StatusForbidden || code != auth.ReasonForbidden || !strings.Contains(string(body), tc.may) {
				t.Fatalf("%d %q %s, want 403 forbidden naming %q", status, code, body, tc.may)
			}
			if jobs := svc.Jobs(scheduler.JobFilter{}); len(jobs) != 0 {
				t.Fatalf("a refused submit queued %s at priority %d", jobs[0].ID, jobs[0].Priority)
			}
		})
	}
	t.Run("through the CLI's client", func(t *testing.T) {
		c, err := NewClient(srv.URL, srv.Client(), WithToken("tok-nlp"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Submit(t.Context(), scheduler.JobSpec{Team: "nlp", Queue: "dev", GPUs: 1, PriorityClass: "critical"})
		if !errors.Is(err, auth.ErrForbidden) || !strings.Contains(err.Error(), "normal, low, best-effort") {
			t.Fatalf("%v, want forbidden naming the classes nlp may use", err)
		}
	})
}

// TestTeamPriorityAllowed: what a queue allows a team works as before — its
// default, lower classes, the classes of its list (above its default
// included) — and operators and admins may submit at any class in any queue.
func TestTeamPriorityAllowed(t *testing.T) {
	srv, svc := priorityServer(t)
	for _, tc := range []struct {
		caller, queue, class string
		priority             int
	}{
		{"nlp", "dev", "", 100},
		{"nlp", "dev", "normal", 100},
		{"nlp", "dev", "low", 10},
		{"nlp", "inference-batch", "", 10},
		{"nlp", "inference-batch", "best-effort", 0},
		{"nlp", "training-prod", "production", 500},
		{"nlp", "training-prod", "", 100},
		{"twoteams", "dev", "low", 10},
		{"ops", "dev", "critical", 1000},
		{"ops", "training-prod", "critical", 1000},
		{"admin", "inference-batch", "critical", 1000},
		{"admin", "training-prod", "best-effort", 0},
	} {
		t.Run(tc.caller+"/"+tc.queue+"/"+tc.class, func(t *testing.T) {
			c, err := NewClient(srv.URL, srv.Client(), WithToken("tok-"+tc.caller))
			if err != nil {
				t.Fatal(err)
			}
			j, err := c.Submit(t.Context(), scheduler.JobSpec{Team: "nlp", Queue: tc.queue, GPUs: 1, PriorityClass: tc.class})
			if err != nil {
				t.Fatal(err)
			}
			if j.Priority != tc.priority {
				t.Fatalf("priority %d, want %d", j.Priority, tc.priority)
			}
			if _, err := svc.Finish(t.Context(), j.ID, "cancelled"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
