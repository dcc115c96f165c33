package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/scheduler"
)

// TestSubmitClustersOverHTTP: POST /v1/jobs takes clusters and locality; the
// job runs where they allow and says why in placement_reason. A cluster set
// naming no cluster, or not a list, is a 400 naming clusters; a set of
// clusters that all refuse the team is a 403 naming the cluster and its rule;
// without a token 401, for another team's queue 403; another team does not
// see the job.
func TestSubmitClustersOverHTTP(t *testing.T) {
	cfg := placedConfig()
	m := &cfg.Model
	m.Clusters[0].Labels = map[string]string{"region": "eu"}
	m.Clusters = append(m.Clusters, scheduler.Cluster{Name: "c2", Labels: map[string]string{"region": "us"}, Teams: []string{"nlp"},
		Nodes: []scheduler.NodeGroup{{Name: "u", Count: 1, Card: "H100-80GB", GPUs: 8}}})
	m.Pools[0].Capacity = map[string]int{"H100-80GB": 24}
	svc, srv := servedAtT0(t, cfg)
	post := func(body string) request { return request{method: http.MethodPost, path: "/v1/jobs", body: body} }
	body := `{"team":"nlp","queue":"nlp","gpus":8,"clusters":["any"],"locality":{"region":"us"},"time_limit_s":3600}`

	if status, code, _ := call(t, srv, "", post(body)); status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d %s, want 401", status, code)
	}
	if status, code, _ := call(t, srv, "vision", post(body)); status != http.StatusForbidden {
		t.Fatalf("vision submitting for nlp: %d %s, want 403", status, code)
	}
	for _, tc := range []struct {
		caller, body string
		status       int
		want         []string
	}{
		{"nlp", strings.Replace(body, `["any"]`, `["c9"]`, 1), http.StatusBadRequest, []string{"clusters[0]", "c9", "c1, c2"}},
		{"nlp", strings.Replace(body, `["any"]`, `"c1"`, 1), http.StatusBadRequest, []string{"clusters"}},
		{"nlp", strings.Replace(body, `"us"`, `"apac"`, 1), http.StatusBadRequest, []string{"c1 lacks locality region=apac", "c2 lacks locality region=apac"}},
		{"vision", `{"team":"vision","queue":"vision","gpus":1,"clusters":["c2"]}`, http.StatusForbidden, []string{"c2 refuses team vision (open to nlp)"}},
	} {
		if status, _, raw := call(t, srv, tc.caller, post(tc.body)); status != tc.status || !containsAll(string(raw), tc.want) {
			t.Errorf("%s: %d %s, want %d naming %q", tc.body, status, raw, tc.status, tc.want)
		}
	}
	if jobs := svc.Jobs(scheduler.JobFilter{}); len(jobs) != 0 {
		t.Fatalf("refused submits queued %d jobs", len(jobs))
	}

	status, _, raw := call(t, srv, "nlp", post(body))
	var j scheduler.Job
	if err := json.Unmarshal(raw, &j); status != http.StatusCreated || err != nil || len(j.Spec.Clusters) != 1 {
		t.Fatalf("submit: %d %s (%v)", status, raw, err)
	}
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if code := getJSON(t, srv.URL+"/v1/jobs/"+j.ID, "tok-nlp", &got); code != http.StatusOK || got["cluster"] != "c2" {
		t.Fatalf("GET the job: %d %v, want it in c2 (the only us cluster)", code, got)
	}
	if why, _ := got["placement_reason"].(string); !strings.HasPrefix(why, "placed in c2: fits now") || !strings.Contains(why, "c1 lacks locality region=us") {
		t.Errorf("placement_reason %q", why)
	}
	if code := getJSON(t, srv.URL+"/v1/jobs/"+j.ID, "tok-vision", nil); code != http.StatusNotFound {
		t.Fatalf("vision reads nlp's job: %d, want 404", code)
	}
}

func containsAll(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
