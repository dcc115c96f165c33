package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
)

// Cells of the role × endpoint table.
const (
	yes = "yes"      // allowed on every team's jobs and rows
	own = "own team" // allowed on the caller's team's only: 403 on another's (404 on another's job ID, as for no job)
	no  = "no"       // 403
)

// matrixRoles are the table's columns: the caller holding each role (nlp is
// team:nlp).
var matrixRoles = []struct{ role, caller string }{
	{"admin", "admin"}, {"operator", "ops"}, {"`team:<name>`", "nlp"}, {"finance", "finance"}, {"analyzer", "analyzer"}, {"agent", "agent"},
}

// request is one call; own says whether it concerns team nlp (the team caller's
// own) rather than team vision.
type request struct {
	method, path, body string
	own                bool
}

// matrix is who may call what: each row an endpoint (the requests that exercise
// it, on team nlp's and team vision's jobs and rows) and a cell per role. The
// table in README.md is rendered from it (TestAuthzTableInREADME), and every cell
// is checked by TestAuthz.
var matrix = []struct {
	endpoint string
	requests []request
	cells    []string // one per matrixRoles
}{
	{"`GET /v1/queues`, `/v1/model`", []request{{"GET", "/v1/queues", "", true}, {"GET", "/v1/model", "", true}},
		[]string{yes, yes, yes, yes, no, no}},
	{"`POST /v1/jobs` (submit)", []request{
		{"POST", "/v1/jobs", `{"team":"nlp","queue":"dev","gpus":1}`, true},
		{"POST", "/v1/jobs", `{"team":"vision","queue":"dev","gpus":1}`, false}},
		[]string{yes, yes, own, no, no, no}},
	{"`GET /v1/jobs`, `/v1/jobs/{id}`", []request{
		{"GET", "/v1/jobs?team=nlp", "", true}, {"GET", "/v1/jobs/sched/nlp/1", "", true},
		{"GET", "/v1/jobs?team=vision", "", false}, {"GET", "/v1/jobs/sched/vision/2", "", false}},
		[]string{yes, yes, own, yes, no, no}},
	{"`POST /v1/jobs/{id}` (finish), `DELETE` (cancel)", []request{
		{"POST", "/v1/jobs/sched/nlp/1", `{"status":"succeeded"}`, true}, {"DELETE", "/v1/jobs/sched/nlp/1", "", true},
		{"POST", "/v1/jobs/sched/vision/2", `{"status":"failed"}`, false}, {"DELETE", "/v1/jobs/sched/vision/2", "", false}},
		[]string{yes, yes, own, no, no, no}},
	{"`GET /v1/actions` (audit trail)", []request{{"GET", "/v1/actions?team=nlp", "", true}, {"GET", "/v1/actions?team=vision", "", false}},
		[]string{yes, yes, own, yes, no, no}},
	{"`POST /v1/findings`", []request{{"POST", "/v1/findings", forgedFinding, true}},
		[]string{yes, no, no, no, yes, no}},
}

// forgedFinding is a zombie on a node: pushed, the zombie-kill policy acts on it
// at the next pass (a skip, for want of an executor, in the audit trail).
const forgedFinding = `{"findings":[{"id":"z1","kind":"zombie","node":"gpu-a-001","pid":4242,"team":"vision","since":"2026-12-01T08:00:00Z"}]}`

// authzServer is a scheduler holding sched/nlp/1 and sched/vision/2 (both
// admitted), its API behind g, and its state after a pass.
func authzServer(t *testing.T, g *auth.Guard) (*httptest.Server, func() string) {
	t.Helper()
	cfg := scheduler.DefaultConfig()
	cfg.Policies[1].DryRun = false // zombie-kill acts on a pushed zombie
	svc, err := scheduler.New(cfg, scheduler.WithClock(func() time.Time { return t0 }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	for _, team := range []string{"nlp", "vision"} {
		ctx := scheduler.ContextWithActor(t.Context(), "token:setup")
		if _, err := svc.Submit(ctx, scheduler.JobSpec{Team: team, Queue: "dev", GPUs: 1}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(NewHandler(svc, g))
	t.Cleanup(srv.Close)
	state := func() string {
		if err := svc.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
		rows, _ := svc.Actions(t.Context(), scheduler.ActionFilter{})
		data, _ := json.Marshal([]any{svc.Jobs(scheduler.JobFilter{}), rows, svc.Queues()})
		return string(data)
	}
	state()
	return srv, state
}

// call sends req as caller ("": no token) and returns the status, the error code
// and the body.
func call(t *testing.T, srv *httptest.Server, caller string, req request) (int, string, []byte) {
	t.Helper()
	r, _ := http.NewRequestWithContext(t.Context(), req.method, srv.URL+req.path, strings.NewReader(req.body))
	if caller != "" {
		r.Header.Set("Authorization", "Bearer tok-"+caller)
	}
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&body)
	var e ErrorResponse
	if resp.StatusCode >= 300 {
		_ = json.Unmarshal(body, &e)
	}
	return resp.StatusCode, e.Code, body
}

// TestAuthz checks every cell of the table: each role's requests on team nlp's
// and team vision's jobs are allowed (2xx) or refused (403 forbidden; 404
// unknown_job for a team naming another team's job by its ID), a request without
// a token gets 401, and a refused request changes nothing — no job, no audit row,
// no finding acted on at the next pass. An allowed change is in the audit trail
// with the caller as its actor.
func TestAuthz(t *testing.T) {
	g := newGuard(t)
	for _, row := range matrix {
		for i, col := range matrixRoles {
			for _, req := range row.requests {
				allowed := row.cells[i] == yes || (row.cells[i] == own && req.own)
				// A team asking for another team's job by its ID is told there is
				// no such job (TestAttackJobExistence), not that it is forbidden.
				hidden := row.cells[i] == own && !req.own && namesJob(req.path)
				t.Run(fmt.Sprintf("%s/%s %s", col.caller, req.method, req.path), func(t *testing.T) {
					checkCall(t, g, col.caller, req, allowed, hidden)
				})
			}
		}
		for _, req := range row.requests {
			t.Run("no token/"+req.method+" "+req.path, func(t *testing.T) {
				srv, state := authzServer(t, g)
				before := state()
				if status, code, _ := call(t, srv, "", req); status != http.StatusUnauthorized || code != "unauthenticated" {
					t.Fatalf("%d %q, want 401 unauthenticated", status, code)
				}
				if state() != before {
					t.Error("an unauthenticated request changed the scheduler's state")
				}
			})
		}
	}
	t.Run("healthz needs no token", func(t *testing.T) {
		srv, _ := authzServer(t, g)
		if status, _, _ := call(t, srv, "", request{method: "GET", path: "/healthz"}); status != http.StatusOK {
			t.Fatalf("/healthz: %d", status)
		}
	})
}

// namesJob is a request for one job by its ID.
func namesJob(path string) bool {
	return strings.HasPrefix(path, "/v1/jobs/") || strings.HasPrefix(path, "/v1/resume/")
}

func checkCall(t *testing.T, g *auth.Guard, caller string, req request, allowed, hidden bool) {
	srv, state := authzServer(t, g)
	before := state()
	status, code, body := call(t, srv, caller, req)
	after := state()
	if !allowed {
		wantStatus, wantCode := http.StatusForbidden, "forbidden"
		if hidden {
			wantStatus, wantCode = http.StatusNotFound, "unknown_job"
		}
		if status != wantStatus || code != wantCode {
			t.Fatalf("%d %q %s, want %d %s", status, code, body, wantStatus, wantCode)
		}
		if after != before {
			t.Fatal("a refused request changed the scheduler's state")
		}
		return
	}
	if status >= 300 {
		t.Fatalf("%d %q %s, want it allowed", status, code, body)
	}
	if req.method == "GET" {
		if after != before {
			t.Error("a read changed the scheduler's state")
		}
		return
	}
	if after == before {
		t.Fatal("an allowed change changed nothing")
	}
	if !strings.Contains(after, `"actor":"token:`+caller+`"`) {
		t.Errorf("the change is not in the audit trail as token:%s's", caller)
	}
}

// TestAuthzTeamScope: a team's unfiltered lists hold only its own jobs and audit
// rows, across every team it belongs to; a team no job is of sees none.
func TestAuthzTeamScope(t *testing.T) {
	g := newGuard(t)
	srv, _ := authzServer(t, g)
	for _, tc := range []struct {
		caller string
		jobs   string
		teams  string // of the audit rows
	}{
		{"nlp", "sched/nlp/1", "nlp"},
		{"vision", "sched/vision/2", "vision"},
		{"twoteams", "sched/nlp/1", "nlp"},
		{"nobody", "", ""},
		{"finance", "sched/nlp/1 sched/vision/2", "nlp vision"},
	} {
		t.Run(tc.caller, func(t *testing.T) {
			var jr JobsResponse
			_, _, body := call(t, srv, tc.caller, request{method: "GET", path: "/v1/jobs?limit=10"})
			if err := json.Unmarshal(body, &jr); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, j := range jr.Jobs {
				ids = append(ids, j.ID)
			}
			if got := strings.Join(ids, " "); got != tc.jobs {
				t.Errorf("jobs %q, want %q", got, tc.jobs)
			}
			var ar ActionsResponse
			_, _, body = call(t, srv, tc.caller, request{method: "GET", path: "/v1/actions"})
			if err := json.Unmarshal(body, &ar); err != nil {
				t.Fatal(err)
			}
			teams := map[string]bool{}
			for _, a := range ar.Actions {
				teams[a.Team] = true
			}
			var got []string
			for _, team := range []string{"nlp", "vision"} {
				if teams[team] {
					got = append(got, team)
				}
			}
			if strings.Join(got, " ") != tc.teams || len(teams) != len(got) {
				t.Errorf("audit rows of teams %v, want %q", teams, tc.teams)
			}
		})
	}
}

// matrixTable renders the matrix as the README's markdown table.
func matrixTable() string {
	var b strings.Builder
	b.WriteString("| endpoint |")
	for _, c := range matrixRoles {
		b.WriteString(" " + c.role + " |")
	}
	b.WriteString("\n| --- |" + strings.Repeat(" --- |", len(matrixRoles)) + "\n")
	for _, row := range matrix {
		b.WriteString("| " + row.endpoint + " |")
		for _, c := range row.cells {
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestAuthzTableInREADME keeps the README's table the one TestAuthz checks.
func TestAuthzTableInREADME(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := matrixTable(); !strings.Contains(string(data), want) {
		t.Errorf("README.md lacks the role × endpoint table TestAuthz checks; it should hold:\n%s", want)
	}
}
