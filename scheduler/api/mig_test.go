package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/scheduler"
)

// TestSubmitMIGOverHTTP: POST /v1/jobs takes mig_profile; the job is placed on
// instances of that profile and counted against its queue's MIG quota; a bad
// profile is a 400 naming mig_profile; without a token 401, for another team
// 403, and another team does not see the job.
func TestSubmitMIGOverHTTP(t *testing.T) {
	cfg := placedConfig()
	m := &cfg.Model
	m.Clusters[0].Nodes[0].MIG = [][]string{{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}}
	m.Pools[0].Capacity = map[string]int{"H100-80GB": 14, "H100-80GB/1g.10gb": 14}
	for i := range m.Queues {
		m.Queues[i].Cohort = ""
		m.Queues[i].Quota = map[string]scheduler.Quota{"H100-80GB": {Nominal: 7}, "H100-80GB/1g.10gb": {Nominal: 2}}
	}
	svc, srv := servedAtT0(t, cfg)
	body := `{"team":"nlp","queue":"nlp","gpus":2,"mig_profile":"1g.10gb","time_limit_s":3600}`
	submit := request{method: http.MethodPost, path: "/v1/jobs", body: body}

	if status, code, _ := call(t, srv, "", submit); status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d %s, want 401", status, code)
	}
	if status, code, _ := call(t, srv, "vision", submit); status != http.StatusForbidden {
		t.Fatalf("vision submitting for nlp: %d %s, want 403", status, code)
	}
	bad := request{method: http.MethodPost, path: "/v1/jobs", body: strings.Replace(body, "1g.10gb", "2g.20gb", 1)}
	if status, _, raw := call(t, srv, "nlp", bad); status != http.StatusBadRequest || !strings.Contains(string(raw), "mig_profile") {
		t.Fatalf("a profile no cluster has: %d %s, want 400 naming mig_profile", status, raw)
	}
	if jobs := svc.Jobs(scheduler.JobFilter{}); len(jobs) != 0 {
		t.Fatalf("refused submits queued %d jobs", len(jobs))
	}

	status, _, raw := call(t, srv, "nlp", submit)
	var j scheduler.Job
	if err := json.Unmarshal(raw, &j); status != http.StatusCreated || err != nil || j.Spec.MIGProfile != "1g.10gb" {
		t.Fatalf("submit: %d %s (%v)", status, raw, err)
	}
	third := request{method: http.MethodPost, path: "/v1/jobs", body: strings.Replace(body, `"gpus":2`, `"gpus":1`, 1)}
	status, _, raw = call(t, srv, "nlp", third)
	var over scheduler.Job
	if err := json.Unmarshal(raw, &over); status != http.StatusCreated || err != nil {
		t.Fatalf("a third instance: %d %s", status, raw)
	}
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got scheduler.Job
	if code := getJSON(t, srv.URL+"/v1/jobs/"+j.ID, "tok-nlp", &got); code != http.StatusOK || got.State != scheduler.StateAdmitted {
		t.Fatalf("GET the job: %d %s (%s)", code, got.State, got.WaitReason)
	}
	if len(got.Placement) != 1 || len(got.Placement[0].GPUs) != 0 || len(got.Placement[0].Slices) != 2 || got.Placement[0].Slices[0].Profile != "1g.10gb" {
		t.Fatalf("placement %+v, want 2 instances of 1g.10gb", got.Placement)
	}
	getJSON(t, srv.URL+"/v1/jobs/"+over.ID, "tok-nlp", &got)
	if got.State != scheduler.StateQueued || !strings.Contains(got.WaitReason, "H100-80GB/1g.10gb, past its nominal 2") {
		t.Fatalf("a third instance past the MIG quota: %s (%s)", got.State, got.WaitReason)
	}
	if code := getJSON(t, srv.URL+"/v1/jobs/"+j.ID, "tok-vision", nil); code != http.StatusNotFound {
		t.Fatalf("vision reads nlp's MIG job: %d, want 404", code)
	}
}
