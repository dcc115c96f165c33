package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/scheduler"
)

// TestSubmitFractionOverHTTP: POST /v1/jobs takes gpu_fraction, sharing and
// gpu_memory_mib; the job is placed on a share of one GPU and counted against
// its queue's H100-80GB/mps quota in thousandths; bad values are a 400 naming
// the field; without a token 401, for another team 403, and another team does
// not see the job.
func TestSubmitFractionOverHTTP(t *testing.T) {
	cfg := placedConfig()
	m := &cfg.Model
	m.Pools[0].Capacity = map[string]int{"H100-80GB": 16, "H100-80GB/mps": 2000}
	for i := range m.Queues {
		m.Queues[i].Cohort = ""
		m.Queues[i].Quota = map[string]scheduler.Quota{"H100-80GB": {Nominal: 8}, "H100-80GB/mps": {Nominal: 1000}}
	}
	svc, srv := servedAtT0(t, cfg)
	body := `{"team":"nlp","queue":"nlp","gpu_fraction":600,"sharing":"mps","gpu_memory_mib":20480,"time_limit_s":3600}`
	submit := request{method: http.MethodPost, path: "/v1/jobs", body: body}

	if status, code, _ := call(t, srv, "", submit); status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d %s, want 401", status, code)
	}
	if status, code, _ := call(t, srv, "vision", submit); status != http.StatusForbidden {
		t.Fatalf("vision submitting for nlp: %d %s, want 403", status, code)
	}
	for field, b := range map[string]string{
		"gpu_fraction":   strings.Replace(body, "600", "1500", 1),
		"sharing":        strings.Replace(body, `"mps"`, `"hami"`, 1),
		"gpu_memory_mib": strings.Replace(body, "20480", "-1", 1),
		"gpus":           strings.Replace(body, `"gpu_fraction"`, `"gpus":2,"gpu_fraction"`, 1),
	} {
		status, _, raw := call(t, srv, "nlp", request{method: http.MethodPost, path: "/v1/jobs", body: b})
		if status != http.StatusBadRequest || !strings.Contains(string(raw), field) {
			t.Fatalf("bad %s: %d %s, want 400 naming it", field, status, raw)
		}
	}
	if jobs := svc.Jobs(scheduler.JobFilter{}); len(jobs) != 0 {
		t.Fatalf("refused submits queued %d jobs", len(jobs))
	}
	var j, over scheduler.Job
	status, _, raw := call(t, srv, "nlp", submit)
	if err := json.Unmarshal(raw, &j); status != http.StatusCreated || err != nil || j.Spec.GPUFraction != 600 || j.Spec.Sharing != "mps" {
		t.Fatalf("submit: %d %s (%v)", status, raw, err)
	}
	status, _, raw = call(t, srv, "nlp", submit)
	if err := json.Unmarshal(raw, &over); status != http.StatusCreated || err != nil {
		t.Fatalf("a second fraction: %d %s", status, raw)
	}
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got scheduler.Job
	if code := getJSON(t, srv.URL+"/v1/jobs/"+j.ID, "tok-nlp", &got); code != http.StatusOK || got.State != scheduler.StateAdmitted {
		t.Fatalf("GET the job: %d %s (%s)", code, got.State, got.WaitReason)
	}
	if p := got.Placement; len(p) != 1 || len(p[0].GPUs) != 0 || len(p[0].Shares) != 1 || p[0].Shares[0].Fraction != 600 || p[0].Shares[0].MemMiB != 20480 {
		t.Fatalf("placement %+v, want one 600/1000 mps share of 20480 MiB", got.Placement)
	}
	getJSON(t, srv.URL+"/v1/jobs/"+over.ID, "tok-nlp", &got)
	if got.State != scheduler.StateQueued || !strings.Contains(got.WaitReason, "1200 H100-80GB/mps, past its nominal 1000") {
		t.Fatalf("a second fraction past the quota: %s (%s)", got.State, got.WaitReason)
	}
	if code := getJSON(t, srv.URL+"/v1/jobs/"+j.ID, "tok-vision", nil); code != http.StatusNotFound {
		t.Fatalf("vision reads nlp's fraction job: %d, want 404", code)
	}
}
