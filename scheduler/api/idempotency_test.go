package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestIdempotencyKeyHeader: over HTTP, a retry with the same Idempotency-Key
// and body (spacing aside) is 201 with the first job and Idempotent-Replayed;
// another body is 422 idempotency_mismatch; a bad or doubled key is 400; another
// caller's use of the key queues its own job (TestAttack… in the scheduler has
// the rest).
func TestIdempotencyKeyHeader(t *testing.T) {
	srv, _, _ := newServer(t)
	send := func(token, body string, keys ...string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v1/jobs", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		for _, k := range keys {
			req.Header.Add(IdempotencyKeyHeader, k)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = decodeBody(resp, &out)
		return resp, out
	}
	body := `{"team":"nlp","queue":"dev","gpus":1}`
	resp, first := send("tok-nlp", body, "k-1")
	if resp.StatusCode != 201 || resp.Header.Get(ReplayedHeader) != "" {
		t.Fatalf("first: %d %v replayed=%q", resp.StatusCode, first, resp.Header.Get(ReplayedHeader))
	}
	resp, again := send("tok-nlp", "{ \"gpus\": 1, \"queue\": \"dev\", \"team\": \"nlp\" }", "k-1")
	if resp.StatusCode != 201 || resp.Header.Get(ReplayedHeader) != "true" || again["id"] != first["id"] {
		t.Errorf("retry: %d replayed=%q job %v, want 201 replayed job %v", resp.StatusCode, resp.Header.Get(ReplayedHeader), again["id"], first["id"])
	}
	if resp, out := send("tok-nlp", `{"team":"nlp","queue":"dev","gpus":2}`, "k-1"); resp.StatusCode != 422 || out["code"] != "idempotency_mismatch" {
		t.Errorf("same key, other body: %d %v, want 422 idempotency_mismatch", resp.StatusCode, out)
	}
	if resp, out := send("tok-nlp", body, "bad key"); resp.StatusCode != 400 || out["code"] != "invalid" {
		t.Errorf("bad key: %d %v, want 400 invalid", resp.StatusCode, out)
	}
	if resp, out := send("tok-nlp", body, "a", "b"); resp.StatusCode != 400 || out["code"] != "invalid" {
		t.Errorf("two keys: %d %v, want 400 invalid", resp.StatusCode, out)
	}
	if resp, out := send("tok-twoteams", body, "k-1"); resp.StatusCode != 201 || out["id"] == first["id"] || resp.Header.Get(ReplayedHeader) != "" {
		t.Errorf("another caller with the key: %d job %v replayed=%q, want a job of its own", resp.StatusCode, out["id"], resp.Header.Get(ReplayedHeader))
	}
}
