package api

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/audit"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// injections are SQL-ish strings sent through every string parameter.
var injections = []string{
	`x' OR 1=1 --`,
	`' OR '1'='1`,
	`nlp' OR team='vision`,
	`nlp') OR (1=1`,
	`'; DROP TABLE actions; --`,
	`\' OR 1=1 #`,
	`{team:String}`,
	`nlp' UNION SELECT * FROM system.users --`,
}

// TestInjection sends SQL-ish strings through every string parameter of the API
// — query parameters, the job path, and the string fields of a submitted job and
// a pushed finding — to a scheduler whose audit trail is in the embedded
// ClickHouse (the actions query takes them as parameters, never as SQL). Each
// returns nothing it should not: no row of another team, no job, the other
// callers' rows intact; a string stored (a job's team) is matched literally.
func TestInjection(t *testing.T) {
	st := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), st, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	svc, err := scheduler.New(scheduler.DefaultConfig(), scheduler.WithClock(func() time.Time { return t0 }),
		scheduler.WithJobIDPrefix(""), scheduler.WithRecorder(audit.NewStoreRecorder(st)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	for _, team := range []string{"nlp", "vision"} {
		if status, _, body := call(t, srv, "admin", request{method: "POST", path: "/v1/jobs", body: `{"team":"` + team + `","queue":"dev","gpus":1}`}); status != 201 {
			t.Fatalf("submit %s: %d %s", team, status, body)
		}
	}
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	total := countActions(t, srv, "admin", "")
	if total != 4 { // a submit and an admit per job
		t.Fatalf("%d audit rows before, want 4", total)
	}
	for _, inj := range injections {
		t.Run(inj, func(t *testing.T) {
			q := url.QueryEscape(inj)
			for _, p := range []string{"job", "decision", "pool", "team"} {
				if n := countActions(t, srv, "admin", p+"="+q); n != 0 {
					t.Errorf("admin: GET /v1/actions?%s=%s returned %d rows", p, inj, n)
				}
			}
			for _, p := range []string{"job", "decision", "pool"} {
				if n := countActions(t, srv, "nlp", p+"="+q); n != 0 {
					t.Errorf("team nlp: GET /v1/actions?%s=%s returned %d rows", p, inj, n)
				}
			}
			expect(t, srv, "nlp", request{method: "GET", path: "/v1/actions?team=" + q}, 403)
			for _, p := range []string{"queue", "team"} {
				var jr JobsResponse
				if status, _, body := call(t, srv, "admin", request{method: "GET", path: "/v1/jobs?" + p + "=" + q}); status != 200 || json.Unmarshal(body, &jr) != nil || len(jr.Jobs) != 0 {
					t.Errorf("GET /v1/jobs?%s=%s: %d %s", p, inj, status, body)
				}
			}
			for _, p := range []string{"/v1/jobs?state=", "/v1/jobs?limit=", "/v1/actions?since=", "/v1/actions?until=", "/v1/actions?limit="} {
				expect(t, srv, "admin", request{method: "GET", path: p + q}, 400)
			}
			jobPath := "/v1/jobs/" + url.PathEscape(inj)
			expect(t, srv, "admin", request{method: "GET", path: jobPath}, 404)
			expect(t, srv, "admin", request{method: "DELETE", path: jobPath}, 404)
			expect(t, srv, "admin", request{method: "POST", path: jobPath, body: `{"status":"succeeded"}`}, 404)
			expect(t, srv, "admin", request{method: "POST", path: "/v1/jobs/sched/nlp/1", body: fmt.Sprintf(`{"status":%q}`, inj)}, 400)
			for _, field := range []string{"queue", "card", "priority_class", "cluster", "workload"} {
				expect(t, srv, "admin", request{method: "POST", path: "/v1/jobs", body: specWith(field, inj)}, 0)
			}
			expect(t, srv, "nlp", request{method: "POST", path: "/v1/jobs", body: specWith("team", inj)}, 403)
			expect(t, srv, "admin", request{method: "POST", path: "/v1/findings", body: findingWith("kind", inj)}, 400)
		})
	}
	if n := countActions(t, srv, "admin", ""); n < total {
		t.Fatalf("%d audit rows after, fewer than the %d before", n, total)
	}
	// A job whose name or model is an injection string is admitted and stored as
	// it is; one whose team is one is refused (a team is a name: letters, digits
	// and "-_."), and its reject row keeps the team literally, found by exactly
	// that string, never by another team's name.
	inj := injections[2]
	for field, want := range map[string]int{"team": 400, "project": 400, "name": 201, "model_name": 201} {
		if status, _, body := call(t, srv, "admin", request{method: "POST", path: "/v1/jobs", body: specWith(field, inj)}); status != want ||
			want == 400 && !strings.Contains(string(body), field+`: \"nlp'`) {
			t.Fatalf("submit with %s %q: %d %s, want %d naming the field", field, inj, status, body, want)
		}
	}
	if rows := actions(t, srv, "admin", "team="+url.QueryEscape(inj)); len(rows) != 1 || rows[0].Team != inj || rows[0].Decision != scheduler.DecReject {
		t.Errorf("the injection team's rows: %+v, want its one reject", rows)
	}
	for _, a := range actions(t, srv, "nlp", "") {
		if a.Team != "nlp" {
			t.Errorf("team nlp sees a row of team %q: %+v", a.Team, a)
		}
	}
	if status, _, body := call(t, srv, "admin", request{method: "POST", path: "/v1/findings", body: findingWith("id", inj)}); status != 202 {
		t.Fatalf("push a finding with id %q: %d %s", inj, status, body)
	}
	if n := countActions(t, srv, "admin", "decision=push"); n != 1 {
		t.Errorf("push rows: %d", n)
	}
}

// actions are the audit rows GET /v1/actions?query returns to caller.
func actions(t *testing.T, srv *httptest.Server, caller, query string) []scheduler.Action {
	t.Helper()
	status, _, body := call(t, srv, caller, request{method: "GET", path: "/v1/actions?" + query})
	var ar ActionsResponse
	if status != 200 || json.Unmarshal(body, &ar) != nil {
		t.Fatalf("GET /v1/actions?%s as %s: %d %s", query, caller, status, body)
	}
	return ar.Actions
}

// countActions is how many audit rows GET /v1/actions?query returns to caller.
func countActions(t *testing.T, srv *httptest.Server, caller, query string) int {
	t.Helper()
	return len(actions(t, srv, caller, query))
}

// expect checks a call's status (0: any 4xx but 401 and 403, which would mean
// the string was taken for something else than a value).
func expect(t *testing.T, srv *httptest.Server, caller string, req request, status int) {
	t.Helper()
	got, _, body := call(t, srv, caller, req)
	if (status != 0 && got != status) || (status == 0 && (got < 400 || got >= 500 || got == 401 || got == 403)) {
		t.Errorf("%s %s %s as %s: %d %s, want %d", req.method, req.path, req.body, caller, got, body, status)
	}
}

// specWith is a valid submit for team nlp with field set to v.
func specWith(field, v string) string {
	spec := map[string]any{"team": "nlp", "queue": "dev", "gpus": 1}
	spec[field] = v
	data, _ := json.Marshal(spec)
	return string(data)
}

// findingWith is a valid zombie finding with field set to v.
func findingWith(field, v string) string {
	f := map[string]any{"id": "z", "kind": "zombie", "node": "n", "pid": 4, "since": "2026-12-01T08:00:00Z"}
	f[field] = v
	data, _ := json.Marshal(map[string]any{"findings": []any{f}})
	return string(data)
}
