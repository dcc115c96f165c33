package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
)

// fragmentedHTTP serves a scheduler whose two 8-GPU nodes are each held by
// four of vision's checkpointable 2-GPU jobs, one of which then ends, with nlp's
// 4-per-node gang waiting: 4 GPUs stranded, one finding with a plan. It
// returns the server's URL and the gang.
func fragmentedHTTP(t *testing.T) (string, scheduler.Job) {
	t.Helper()
	now := t0
	cfg := placedConfig()
	// vision's six jobs left are within its quota: nlp's gang is owed no
	// reclaim, and the moves are the only way it starts.
	for i, q := range cfg.Model.Queues {
		cfg.Model.Queues[i].Quota = map[string]scheduler.Quota{"H100-80GB": {Nominal: map[string]int{"vision": 12, "nlp": 4}[q.Name]}}
	}
	svc, err := scheduler.New(cfg, scheduler.WithClock(func() time.Time { return now }), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	srv := newTestHTTP(t, svc)
	var jobs []scheduler.Job
	for range 8 {
		j, err := svc.Submit(t.Context(), scheduler.JobSpec{Team: "vision", Queue: "vision", GPUs: 2, Card: "H100-80GB", Checkpointable: true})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	ended := map[string]bool{}
	for _, j := range jobs {
		j, _ = svc.Job(j.ID)
		if n := j.Placement[0].Node; !ended[n] {
			ended[n] = true
			if _, err := svc.Finish(t.Context(), j.ID, "succeeded"); err != nil {
				t.Fatal(err)
			}
		}
	}
	gang, err := svc.Submit(t.Context(), scheduler.JobSpec{Team: "nlp", Queue: "nlp", GPUs: 4, GPUsPerNode: 4, Card: "H100-80GB"})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute) // findings are brought up to date once a minute
	if err := svc.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	return srv, gang
}

// TestClientFragmentationFindings: the client reads the open findings; with
// an admin's credential each comes with its plan (the move of one of vision's
// jobs so that nlp's gang starts), with a team's credential without plans and
// NoPlan saying how many; without a credential it fails with 401; and
// Fragmentation still returns the figure alone.
func TestClientFragmentationFindings(t *testing.T) {
	srv, gang := fragmentedHTTP(t)
	client := func(tok string) *Client {
		c, err := NewClient(srv, nil, WithToken(tok))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	fs, err := client("tok-admin").FragmentationFindings(context.Background())
	if err != nil || len(fs) != 1 {
		t.Fatalf("admin: %+v, %v; want one finding", fs, err)
	}
	f := fs[0]
	if f.Cluster != "c1" || f.Card != "H100-80GB" || f.Stranded != 4 || f.Waiting != 1 || !f.Since.Equal(t0.Add(time.Minute)) || len(f.Plans) != 1 {
		t.Fatalf("admin: finding %+v", f)
	}
	if p := f.Plans[0]; p.For != gang.ID || len(p.Moves) != 1 || p.Moves[0].GPUs != 2 || p.Moves[0].Job == gang.ID || !strings.Contains(p.String(), gang.ID) {
		t.Fatalf("admin: plan %s", p)
	}
	fs, err = client("tok-nlp").FragmentationFindings(context.Background())
	if err != nil || len(fs) != 1 || len(fs[0].Plans) != 0 || !strings.HasPrefix(fs[0].NoPlan, "1 plans") || fs[0].Stranded != 4 {
		t.Fatalf("nlp: %+v, %v; want the figures, no plan, and how many", fs, err)
	}
	frag, err := client("tok-admin").Fragmentation(context.Background())
	if err != nil || len(frag) != 1 || frag[0].Stranded != 4 {
		t.Fatalf("Fragmentation: %+v, %v", frag, err)
	}
	var e *Error
	if _, err := client("").FragmentationFindings(context.Background()); !errors.As(err, &e) || e.Status != http.StatusUnauthorized {
		t.Fatalf("without a token: %v, want 401", err)
	}
}

// TestClientFragmentationFindingsUnplaced: a scheduler that counts GPUs has
// no findings, and the client returns nil.
func TestClientFragmentationFindingsUnplaced(t *testing.T) {
	svc := unplacedService(t)
	c, err := NewClient(newTestHTTP(t, svc), nil, WithToken("tok-admin"))
	if err != nil {
		t.Fatal(err)
	}
	if fs, err := c.FragmentationFindings(context.Background()); err != nil || fs != nil {
		t.Fatalf("unplaced: %+v, %v; want nil", fs, err)
	}
}
