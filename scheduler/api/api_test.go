package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// newServer runs the API over a real scheduler on a fixed clock; the client is
// the admin's.
func newServer(t *testing.T) (*httptest.Server, *Client, *scheduler.Service) {
	t.Helper()
	cfg := scheduler.DefaultConfig()
	cfg.Policies[1].DryRun = false // zombie-kill: no executor, so it is skipped
	svc, err := scheduler.New(cfg, scheduler.WithClock(func() time.Time { return t0 }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, srv.Client(), WithToken("tok-admin"))
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, svc
}

// TestStatusCodes sends raw requests, as admin, and checks status and error code.
func TestStatusCodes(t *testing.T) {
	srv, _, _ := newServer(t)
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"submit", "POST", "/v1/jobs", `{"team":"nlp","queue":"dev","gpus":1}`, 201, ""},
		{"unknown queue", "POST", "/v1/jobs", `{"team":"nlp","queue":"gaming","gpus":1}`, 404, "unknown_queue"},
		{"over quota", "POST", "/v1/jobs", `{"team":"nlp","queue":"dev","gpus":9,"card":"L40S-48GB"}`, 422, "over_quota"},
		{"invalid size", "POST", "/v1/jobs", `{"team":"nlp","queue":"dev","gpus":0}`, 400, "invalid"},
		{"unknown card", "POST", "/v1/jobs", `{"team":"nlp","queue":"dev","gpus":1,"card":"TPU"}`, 400, "invalid"},
		{"bad json", "POST", "/v1/jobs", `{"team":`, 400, "invalid"},
		{"unknown field", "POST", "/v1/jobs", `{"team":"nlp","queue":"dev","gpus":1,"gpu":2}`, 400, "invalid"},
		{"trailing garbage", "POST", "/v1/jobs", `{"team":"nlp","queue":"dev","gpus":1}garbage`, 400, "invalid"},
		{"two objects", "POST", "/v1/jobs", `{"team":"nlp","queue":"dev","gpus":1}{}`, 400, "invalid"},
		{"trailing white space", "POST", "/v1/jobs", "{\"team\":\"nlp\",\"queue\":\"dev\",\"gpus\":1} \n", 201, ""},
		{"empty body", "POST", "/v1/jobs", ``, 400, "invalid"},
		{"finish with trailing data", "POST", "/v1/jobs/sched/nlp/1", `{"status":"succeeded"}{"status":"failed"}`, 400, "invalid"},
		{"findings with trailing data", "POST", "/v1/findings", `{"findings":[]}]`, 400, "invalid"},
		{"no team", "POST", "/v1/jobs", `{"queue":"dev","gpus":1}`, 400, "invalid"},
		{"empty team", "POST", "/v1/jobs", `{"team":"","queue":"dev","gpus":1}`, 400, "invalid"},
		{"team with a slash", "POST", "/v1/jobs", `{"team":"nlp/x","queue":"dev","gpus":1}`, 400, "invalid"},
		{"time limit 2^63-1 s", "POST", "/v1/jobs", `{"team":"nlp","queue":"dev","gpus":1,"time_limit_s":9223372036854775807}`, 400, "invalid"},
		{"time limit just past a duration", "POST", "/v1/jobs", `{"team":"nlp","queue":"dev","gpus":1,"time_limit_s":9223372037}`, 400, "invalid"},
		{"negative time limit", "POST", "/v1/jobs", `{"team":"nlp","queue":"dev","gpus":1,"time_limit_s":-1}`, 400, "invalid"},
		{"queues", "GET", "/v1/queues", "", 200, ""},
		{"model", "GET", "/v1/model", "", 200, ""},
		{"jobs", "GET", "/v1/jobs?state=queued", "", 200, ""},
		{"bad state", "GET", "/v1/jobs?state=sleeping", "", 400, "invalid"},
		{"job", "GET", "/v1/jobs/sched/nlp/1", "", 200, ""},
		{"unknown job", "GET", "/v1/jobs/sched/nlp/99", "", 404, "unknown_job"},
		{"bad status", "POST", "/v1/jobs/sched/nlp/1", `{"status":"exploded"}`, 400, "invalid"},
		{"cancel", "DELETE", "/v1/jobs/sched/nlp/1", "", 200, ""},
		{"cancel twice", "DELETE", "/v1/jobs/sched/nlp/1", "", 409, "job_state"},
		{"actions", "GET", "/v1/actions?decision=reject&limit=5", "", 200, ""},
		{"bad since", "GET", "/v1/actions?since=yesterday", "", 400, "invalid"},
		{"findings", "POST", "/v1/findings", `{"findings":[{"id":"z","kind":"zombie","node":"n","pid":4,"since":"2026-12-01T08:00:00Z"}]}`, 202, ""},
		{"bad finding", "POST", "/v1/findings", `{"findings":[{"id":"z","kind":"slow"}]}`, 400, "invalid"},
		{"misspelt finding field", "POST", "/v1/findings", `{"findings":[{"id":"z","kind":"zombie","node":"n","pdi":4,"since":"2026-12-01T08:00:00Z"}]}`, 400, "invalid"},
		{"analyzer's finding", "POST", "/v1/findings", `{"findings":[{"id":"i","kind":"idle","state":"open","severity":"warning","gpu_uuid":"GPU-1","gpu_uuids":["GPU-1"],"since":"2026-12-01T08:00:00Z","evidence":{"samples":4},"waste_cost":1}]}`, 202, ""},
		{"health", "GET", "/healthz", "", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer tok-admin")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e ErrorResponse
			if resp.StatusCode >= 300 {
				_ = decodeBody(resp, &e)
			}
			if resp.StatusCode != tt.status || e.Code != tt.code {
				t.Fatalf("%s %s = %d %q (%s), want %d %q", tt.method, tt.path, resp.StatusCode, e.Code, e.Error, tt.status, tt.code)
			}
		})
	}
}

// TestClient goes through the client: submit, list, finish, actions, and errors
// that match the scheduler's sentinels.
func TestClient(t *testing.T) {
	_, c, svc := newServer(t)
	ctx := t.Context()
	j, err := c.Submit(ctx, scheduler.JobSpec{Team: "nlp", Queue: "dev", GPUs: 1, MinMemoryGiB: 40})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := c.Job(ctx, j.ID)
	if err != nil || got.State != scheduler.StateAdmitted || got.Card != "L40S-48GB" {
		t.Fatalf("job %+v err %v", got, err)
	}
	jobs, err := c.Jobs(ctx, scheduler.JobFilter{Queue: "dev", State: scheduler.StateAdmitted})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %+v err %v", jobs, err)
	}
	qs, err := c.Queues(ctx)
	if err != nil || len(qs) != 5 {
		t.Fatalf("queues %d err %v", len(qs), err)
	}
	if _, err := c.Finish(ctx, j.ID, "succeeded"); err != nil {
		t.Fatal(err)
	}
	rows, err := c.Actions(ctx, scheduler.ActionFilter{Job: j.ID})
	if err != nil || len(rows) != 3 || rows[0].Decision != scheduler.DecSubmit || rows[1].Decision != scheduler.DecAdmit ||
		rows[2].Decision != scheduler.DecFinish || rows[0].Actor != "token:admin" || rows[1].Actor != "" || rows[2].Actor != "token:admin" {
		t.Fatalf("actions %+v err %v", rows, err)
	}
	errs := []struct {
		spec scheduler.JobSpec
		want error
	}{
		{scheduler.JobSpec{Team: "nlp", Queue: "gaming", GPUs: 1}, scheduler.ErrUnknownQueue},
		{scheduler.JobSpec{Team: "nlp", Queue: "dev", GPUs: 100}, scheduler.ErrOverQuota},
		{scheduler.JobSpec{Team: "nlp", Queue: "dev", GPUs: -1}, scheduler.ErrInvalidJob},
	}
	for _, e := range errs {
		_, err := c.Submit(ctx, e.spec)
		var apiErr *Error
		if !errors.Is(err, e.want) || !errors.As(err, &apiErr) || apiErr.Message == "" {
			t.Errorf("Submit(%+v) = %v, want %v", e.spec, err, e.want)
		}
	}
	if _, err := c.Job(ctx, "sched/nlp/404"); !errors.Is(err, scheduler.ErrUnknownJob) {
		t.Errorf("Job = %v", err)
	}
	if err := c.AddFindings(ctx, []schemas.Finding{{ID: "w", Kind: "wrong_card", Job: "k8s/a/b", FirstSeen: t0}}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	rows, _ = c.Actions(ctx, scheduler.ActionFilter{Decision: scheduler.DecRecommend})
	if len(rows) != 1 || rows[0].FindingID != "w" {
		t.Errorf("recommend rows %+v", rows)
	}
}

// TestUnreachable: a client pointed at nothing says how to fix it.
func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, _ := NewClient(url, nil)
	_, err := c.Queues(t.Context())
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "gpupool scheduler") {
		t.Fatalf("err %v", err)
	}
	if _, err := NewClient("localhost:9470", nil); err == nil {
		t.Error("a URL without scheme was accepted")
	}
}

// TestServeTLS: Serve with a TLS configuration speaks HTTPS only.
func TestServeTLS(t *testing.T) {
	ts := httptest.NewTLSServer(http.NotFoundHandler()) // for its certificate and a client trusting it
	defer ts.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, err := Serve(ctx, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }), ts.TLS, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.Client().Get("https://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Fatalf("https: %d %v", resp.StatusCode, resp.TLS)
	}
	if resp, err := http.Get("http://" + addr + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP served")
		}
	}
}

// TestSubmitRefusesHostileIdentifiers: what the issue found accepted is now a
// 400 whose message names the field and the problem, quotes at most a little of
// the value, and leaves no job behind: a 7 MB team, no team, a time limit of
// 2⁶³−1 seconds (which wrapped around past the pool's maximum), a 7 MB label.
func TestSubmitRefusesHostileIdentifiers(t *testing.T) {
	srv, _, svc := newServer(t)
	big := strings.Repeat("t", 7<<20)
	for _, tc := range []struct {
		name string
		spec map[string]any
		want string
	}{
		{"7 MB team", map[string]any{"team": big, "queue": "dev", "gpus": 1}, "team: \"ttt"},
		{"no team", map[string]any{"queue": "dev", "gpus": 1}, "team: missing"},
		{"7 MB queue", map[string]any{"team": "nlp", "queue": big, "gpus": 1}, "queue: \"ttt"},
		{"7 MB job name", map[string]any{"team": "nlp", "queue": "dev", "gpus": 1, "name": big}, "name: \"ttt"},
		{"label value", map[string]any{"team": "nlp", "queue": "dev", "gpus": 1, "labels": map[string]string{"k": big[:300]}}, `labels."k": `},
		{"time limit 2^63-1", map[string]any{"team": "nlp", "queue": "dev", "gpus": 1, "time_limit_s": int64(1<<63 - 1)}, "time_limit_s: 9223372036854775807 seconds is more than a duration holds"},
		{"time limit just over the pool's maximum", map[string]any{"team": "nlp", "queue": "dev", "gpus": 1, "time_limit_s": 48*3600 + 1}, "time_limit_s: 48h0m1s is past pool dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(tc.spec)
			status, _, reply := call(t, srv, "admin", request{method: "POST", path: "/v1/jobs", body: string(body)})
			var e ErrorResponse
			if err := json.Unmarshal(reply, &e); err != nil || status != http.StatusBadRequest || e.Code != "invalid" {
				t.Fatalf("%d %.200s, want 400 invalid", status, reply)
			}
			if !strings.Contains(e.Error, tc.want) || len(e.Error) > 400 {
				t.Errorf("error %.500q (%d bytes): want it to say %q, briefly", e.Error, len(e.Error), tc.want)
			}
		})
	}
	// Refusals before the identifier check quote little of the value too: a
	// team's submit for a 7 MB team (403), a finish with a 7 MB status (400).
	body, _ := json.Marshal(map[string]any{"team": big, "queue": "dev", "gpus": 1})
	if status, _, reply := call(t, srv, "nlp", request{method: "POST", path: "/v1/jobs", body: string(body)}); status != http.StatusForbidden || len(reply) > 1000 {
		t.Errorf("team nlp submitting for a 7 MB team: %d, %d bytes of reply", status, len(reply))
	}
	if jobs := svc.Jobs(scheduler.JobFilter{}); len(jobs) != 0 {
		t.Errorf("%d jobs admitted, want none", len(jobs))
	}
	j, err := svc.Submit(t.Context(), scheduler.JobSpec{Team: "nlp", Queue: "dev", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = json.Marshal(map[string]string{"status": big})
	if status, _, reply := call(t, srv, "admin", request{method: "POST", path: "/v1/jobs/" + j.ID, body: string(body)}); status != http.StatusBadRequest || len(reply) > 1000 {
		t.Errorf("finish with a 7 MB status: %d, %d bytes of reply", status, len(reply))
	}
	acts, err := svc.Actions(t.Context(), scheduler.ActionFilter{Decision: scheduler.DecReject})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if len(a.Team) > schemas.MaxNameLen || len(a.Queue) > schemas.MaxNameLen || len(a.Reason) > 1000 {
			t.Errorf("reject row keeps %d bytes of team, %d of queue, %d of reason", len(a.Team), len(a.Queue), len(a.Reason))
		}
	}
}

// TestClientChecksBeforeSending: the client (what gpupool submit uses) refuses
// a request the server would refuse for its identifiers or numbers with the
// same error, without sending it.
func TestClientChecksBeforeSending(t *testing.T) {
	sent := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		sent++
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, srv.Client(), WithToken("tok-admin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []scheduler.JobSpec{
		{Team: strings.Repeat("t", 7<<20), Queue: "dev", GPUs: 1},
		{Queue: "dev", GPUs: 1},
		{Team: "nlp", Queue: "dev", GPUs: 1, TimeLimitS: 1<<63 - 1},
		{Team: "nlp", Queue: "dev", GPUs: 1, Labels: map[string]string{"k": "\x1b[31m"}},
	} {
		if _, err := c.Submit(t.Context(), spec); !errors.Is(err, scheduler.ErrInvalidJob) || len(err.Error()) > 400 {
			t.Errorf("submit %.80q: %.300v, want a short ErrInvalidJob", spec.Team, err)
		}
	}
	if sent != 0 {
		t.Errorf("%d requests sent", sent)
	}
}
