package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
)

// TestFragmentationEndpoint: GET /v1/fragmentation gives every reader the
// fleet's free and stranded GPUs per cluster and card (aggregates: no job or
// team is named), the client reads it, and callers without a reader role
// are refused.
func TestFragmentationEndpoint(t *testing.T) {
	svc, err := scheduler.New(placedConfig(), scheduler.WithClock(func() time.Time { return t0 }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	srv := newTestHTTP(t, svc)
	for _, s := range []scheduler.JobSpec{
		{Team: "nlp", Queue: "nlp", GPUs: 6, Card: "H100-80GB"},
		{Team: "vision", Queue: "vision", GPUs: 6, Card: "H100-80GB"},
		{Team: "vision", Queue: "vision", GPUs: 4, GPUsPerNode: 4, Card: "H100-80GB"},
	} {
		if _, err := svc.Submit(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		if err := svc.Pass(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var got FragmentationResponse
	if code := getJSON(t, srv+"/v1/fragmentation", "tok-nlp", &got); code != http.StatusOK {
		t.Fatalf("nlp reads fragmentation: %d", code)
	}
	if !got.Placed || len(got.Fragmentation) != 1 {
		t.Fatalf("fragmentation %+v: want one domain (c1 H100)", got)
	}
	d := got.Fragmentation[0]
	if d.Cluster != "c1" || d.Card != "H100-80GB" || d.GPUs != 16 || d.Free != 4 || d.Stranded != 4 || d.Waiting != 1 || d.LargestOnNode != 2 {
		t.Fatalf("c1 H100 %+v: want 16 GPUs, 4 free (2 per node), all stranded for the waiting 4-per-node job", d)
	}
	c, err := NewClient(srv, nil, WithToken("tok-finance"))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := c.Fragmentation(context.Background())
	if err != nil || len(fs) != 1 || fs[0] != d {
		t.Fatalf("client: %+v, %v; want %+v", fs, err, d)
	}
	for tok, want := range map[string]int{"": http.StatusUnauthorized, "tok-wrong": http.StatusUnauthorized, "tok-analyzer": http.StatusForbidden, "tok-agent": http.StatusForbidden} {
		if code := getJSON(t, srv+"/v1/fragmentation", tok, nil); code != want {
			t.Errorf("token %q: %d, want %d", tok, code, want)
		}
	}
}

// unplacedService is a scheduler that counts GPUs (its cluster has no nodes).
func unplacedService(t *testing.T) *scheduler.Service {
	t.Helper()
	cfg := placedConfig()
	cfg.Model.Clusters[0].Nodes = nil
	cfg.Model.Clusters[0].Capacity = map[string]int{"H100-80GB": 16}
	svc, err := scheduler.New(cfg, scheduler.WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestFragmentationUnplaced: a scheduler that counts GPUs says so, with an
// empty list, and the client returns nil.
func TestFragmentationUnplaced(t *testing.T) {
	svc := unplacedService(t)
	srv := newTestHTTP(t, svc)
	var got map[string]any
	if code := getJSON(t, srv+"/v1/fragmentation", "tok-admin", &got); code != http.StatusOK || got["placed"] != false {
		t.Fatalf("unplaced: %d %v", code, got)
	}
	if l, ok := got["fragmentation"].([]any); !ok || len(l) != 0 {
		t.Fatalf("unplaced fragmentation %v: want []", got["fragmentation"])
	}
}

// TestFragmentationFindingsEndpoint: GET /v1/fragmentation carries the open
// fragmentation findings; their plans of moves name other teams' jobs, so a
// team's caller gets the figures and how many plans, and an operator or
// finance caller the moves.
func TestFragmentationFindingsEndpoint(t *testing.T) {
	srv, _ := fragmentedHTTP(t)
	for tok, wantPlans := range map[string]bool{"tok-admin": true, "tok-finance": true, "tok-vision": false, "tok-nlp": false} {
		var got FragmentationResponse
		if code := getJSON(t, srv+"/v1/fragmentation", tok, &got); code != http.StatusOK {
			t.Fatalf("%s: %d", tok, code)
		}
		if len(got.Findings) != 1 || got.Findings[0].Stranded != 4 || got.Findings[0].Kind != "fragmentation" {
			t.Fatalf("%s: findings %+v", tok, got.Findings)
		}
		f := got.Findings[0]
		if wantPlans != (len(f.Plans) == 1) || (!wantPlans && f.NoPlan == "") {
			t.Errorf("%s: plans %+v (%q), want shown: %v", tok, f.Plans, f.NoPlan, wantPlans)
		}
	}
}
