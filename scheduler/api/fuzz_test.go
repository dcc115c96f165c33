package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
)

// fuzzHandler is the API over a real scheduler with a job of team nlp, behind a
// guard knowing testTokens.
func fuzzHandler(f *testing.F) http.Handler {
	cfg := scheduler.DefaultConfig()
	svc, err := scheduler.New(cfg, scheduler.WithClock(func() time.Time { return t0 }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		f.Fatal(err)
	}
	if _, err := svc.Submit(f.Context(), scheduler.JobSpec{Team: "nlp", Queue: "dev", GPUs: 1}); err != nil {
		f.Fatal(err)
	}
	return NewHandler(svc, newGuard(f))
}

// serveFuzz sends one request as caller and checks the reply: never a 5xx, and a
// JSON reply that decodes (an error with its code).
func serveFuzz(t *testing.T, h http.Handler, caller, method, path, rawQuery string, body []byte) {
	r := httptest.NewRequest(method, "/", bytes.NewReader(body))
	r.URL.Path, r.URL.RawQuery = path, rawQuery
	r.Header.Set("Authorization", "Bearer tok-"+caller)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code >= 500 {
		t.Fatalf("%s %s?%s %q as %s: %d %s", method, path, rawQuery, body, caller, w.Code, w.Body)
	}
	if w.Header().Get("Content-Type") != "application/json" || w.Body.Len() == 0 {
		return
	}
	var v any
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%s %s: reply is not JSON: %s", method, path, w.Body)
	}
	if w.Code >= 400 {
		var e ErrorResponse
		if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Code == "" || e.Error == "" {
			t.Fatalf("%s %s: error without code: %s", method, path, w.Body)
		}
	}
}

// seeds adds bodies to f's corpus.
func seeds(f *testing.F, bodies ...string) {
	for _, s := range bodies {
		f.Add([]byte(s))
	}
}

// FuzzJobsBody: any body POSTed to /v1/jobs, as admin and as a team. Besides
// serveFuzz's checks: a body json.Unmarshal refuses (trailing data, two
// objects) is never admitted, and an admitted job's identifiers pass the
// shared rules and its time limit converts to a duration.
func FuzzJobsBody(f *testing.F) {
	h := fuzzHandler(f)
	seeds(f, `{"team":"nlp","queue":"dev","gpus":1}`, `{"team":"vision","queue":"dev","gpus":1,"labels":{"a":"b"}}`,
		`{"team":"nlp","queue":"dev","gpus":-1,"time_limit_s":-5}`, `{"team":"nlp"`, `[]`, `{"preemptible":"yes"}`,
		`{"team":"nlp","queue":"dev","gpus":1}garbage`, `{"team":"nlp","queue":"dev","gpus":1}{}`, `{"queue":"dev","gpus":1}`,
		`{"team":"nlp","queue":"dev","gpus":1,"time_limit_s":9223372036854775807}`, `{"team":"nl p","queue":"dev","gpus":1}`,
		`{"team":"nlp","queue":"dev","gpus":1,"name":"a\u0000b"}`, `{"team":"nlp","queue":"dev","gpus":1,"labels":{"":"x"}}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		serveFuzz(t, h, "admin", "POST", "/v1/jobs", "", body)
		serveFuzz(t, h, "nlp", "POST", "/v1/jobs", "", body)
		r := httptest.NewRequest("POST", "/v1/jobs", bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer tok-admin")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusCreated {
			return
		}
		var spec scheduler.JobSpec
		if err := json.Unmarshal(body, &spec); err != nil {
			t.Fatalf("admitted %q, which json.Unmarshal refuses: %v", body, err)
		}
		var j scheduler.Job
		if err := json.Unmarshal(w.Body.Bytes(), &j); err != nil {
			t.Fatal(err)
		}
		if err := j.Spec.Validate(); err != nil || len(j.ID) > schemas.MaxKeyLen {
			t.Fatalf("admitted job %.200s: %v", j.ID, err)
		}
	})
}

// FuzzJobPath: any job path, read, finished (any body) and cancelled, as admin
// and as a team.
func FuzzJobPath(f *testing.F) {
	h := fuzzHandler(f)
	for _, s := range []string{"sched/nlp/1", "sched/nlp/1/2", "../../v1/findings", "sched/vision/%2F", "", "k8s/ns/uid", "x' OR 1=1 --"} {
		f.Add(s, []byte(`{"status":"succeeded"}`))
	}
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		for _, caller := range []string{"admin", "vision"} {
			serveFuzz(t, h, caller, "GET", "/v1/jobs/"+id, "", nil)
			serveFuzz(t, h, caller, "POST", "/v1/jobs/"+id, "", body)
			serveFuzz(t, h, caller, "DELETE", "/v1/jobs/"+id, "", nil)
		}
	})
}

// FuzzListQuery: any query string of the lists (jobs, actions, queues, model),
// as admin and as a team.
func FuzzListQuery(f *testing.F) {
	h := fuzzHandler(f)
	for _, s := range []string{"state=queued&limit=5", "team=nlp&queue=dev", "since=2026-12-01T00:00:00Z&until=x", "limit=-1", "team=%zz", "job=a&job=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		for _, caller := range []string{"admin", "nlp"} {
			for _, path := range []string{"/v1/jobs", "/v1/actions", "/v1/queues", "/v1/model"} {
				serveFuzz(t, h, caller, "GET", path, query, nil)
			}
		}
	})
}

// FuzzFindingsBody: any body POSTed to /v1/findings, as the analyzer and as a
// team (403 whatever it holds).
func FuzzFindingsBody(f *testing.F) {
	h := fuzzHandler(f)
	seeds(f, forgedFinding, `{"findings":[{"id":"i","kind":"idle","state":"resolved","since":"2026-12-01T08:00:00Z"}]}`,
		`{"findings":[{"id":"","kind":"zombie"}]}`, `{"findings":null}`, `{"findings":[{"evidence":{"x":1e400}}]}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		serveFuzz(t, h, "analyzer", "POST", "/v1/findings", "", body)
		r := httptest.NewRequest("POST", "/v1/findings", bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer tok-nlp")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusForbidden {
			t.Fatalf("a team pushed findings: %d %s", w.Code, w.Body)
		}
	})
}
