package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
)

// teamsServer is a scheduler holding a dev job of each team, in order (IDs
// sched/<team>/<n> from 1), its API behind the test tokens.
func teamsServer(t *testing.T, teams ...string) (*httptest.Server, *scheduler.Service) {
	t.Helper()
	svc, err := scheduler.New(scheduler.DefaultConfig(), scheduler.WithClock(func() time.Time { return t0 }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	ctx := scheduler.ContextWithActor(t.Context(), "token:setup")
	for _, team := range teams {
		if _, err := svc.Submit(ctx, scheduler.JobSpec{Team: team, Queue: "dev", GPUs: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	return srv, svc
}

// answer is a response as its caller sees it.
type answer struct {
	status      int
	contentType string
	body        []byte
}

func ask(t *testing.T, srv *httptest.Server, caller string, req request) answer {
	t.Helper()
	r, _ := http.NewRequestWithContext(t.Context(), req.method, srv.URL+req.path, strings.NewReader(req.body))
	r.Header.Set("Authorization", "Bearer tok-"+caller)
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), body}
}

// TestAttackJobExistence: a team that names another team's job by its ID, to
// read, finish, cancel or resume it or to read its audit rows, gets the very
// answer (status, content type, body, byte for byte) it gets when no job has
// that ID, so it cannot tell whether the ID is taken; and the job is left as it
// was. Roles that read every job still see it.
func TestAttackJobExistence(t *testing.T) {
	const other = "sched/vision/2"
	taken, svc := teamsServer(t, "nlp", "vision") // sched/vision/2 is team vision's
	free, _ := teamsServer(t, "nlp")              // no job sched/vision/2
	if j, err := svc.Job(other); err != nil || j.Spec.Team != "vision" {
		t.Fatalf("%s: %+v %v", other, j, err)
	}
	before := svc.Jobs(scheduler.JobFilter{})
	for _, caller := range []string{"nlp", "twoteams", "nobody"} {
		for _, req := range []request{
			{method: "GET", path: "/v1/jobs/" + other},
			{method: "GET", path: "/v1/jobs/" + other + "/1"},
			{method: "POST", path: "/v1/jobs/" + other, body: `{"status":"failed"}`},
			{method: "DELETE", path: "/v1/jobs/" + other},
			{method: "POST", path: "/v1/resume/" + other},
			{method: "GET", path: "/v1/actions?job=" + other},
		} {
			t.Run(caller+"/"+req.method+" "+req.path, func(t *testing.T) {
				got, none := ask(t, taken, caller, req), ask(t, free, caller, req)
				if got.status != none.status || got.contentType != none.contentType || !bytes.Equal(got.body, none.body) {
					t.Errorf("another team's job answers %d %s %s\nno job answers      %d %s %s", got.status, got.contentType, got.body,
						none.status, none.contentType, none.body)
				}
				if namesJob(req.path) && got.status != http.StatusNotFound {
					t.Errorf("%d %s, want 404 unknown_job", got.status, got.body)
				}
			})
		}
	}
	if after := svc.Jobs(scheduler.JobFilter{}); len(after) != len(before) || after[1].State != before[1].State || after[1].Status != before[1].Status {
		t.Errorf("the refused calls changed the jobs: %+v, was %+v", after, before)
	}
	for _, caller := range []string{"admin", "ops", "finance", "vision"} {
		if a := ask(t, taken, caller, request{method: "GET", path: "/v1/jobs/" + other}); a.status != http.StatusOK {
			t.Errorf("%s reading %s: %d %s, want 200", caller, other, a.status, a.body)
		}
	}
	if a := ask(t, taken, "finance", request{method: "DELETE", path: "/v1/jobs/" + other}); a.status != http.StatusForbidden {
		t.Errorf("finance cancelling %s: %d %s, want 403 (it sees the job, it may not change it)", other, a.status, a.body)
	}
}

// failingActions is a scheduler whose audit trail fails as the store's engine
// would.
type failingActions struct{ *scheduler.Service }

const engineSecret = "query SELECT ts FROM gpupool.actions: chdb: Code: 62. DB::Exception: Syntax error (SYNTAX_ERROR)"

func (failingActions) Actions(context.Context, scheduler.ActionFilter) ([]scheduler.Action, error) {
	return nil, errors.New("audit: read actions: " + engineSecret)
}

// TestAttackAPIHidesInternalErrors: a call that fails inside the scheduler
// answers 500 internal without the store's query or its engine's exception.
func TestAttackAPIHidesInternalErrors(t *testing.T) {
	_, svc := teamsServer(t, "nlp")
	srv := httptest.NewServer(NewHandler(failingActions{svc}, newGuard(t)))
	t.Cleanup(srv.Close)
	for _, caller := range []string{"nlp", "admin"} {
		a := ask(t, srv, caller, request{method: "GET", path: "/v1/actions?job=sched/nlp/1"})
		if a.status != http.StatusInternalServerError || !bytes.Contains(a.body, []byte(`"internal"`)) {
			t.Errorf("%s: %d %s, want 500 internal", caller, a.status, a.body)
		}
		for _, leak := range []string{"DB::Exception", "SELECT", "chdb", "Code: 62"} {
			if bytes.Contains(a.body, []byte(leak)) {
				t.Errorf("%s: the answer carries %q: %s", caller, leak, a.body)
			}
		}
	}
}
