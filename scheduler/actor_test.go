package scheduler

import (
	"context"
	"slices"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// TestActorRecorded: calls that carry an actor (the API's) write each change
// they ask for to the audit trail with that actor; calls without one (the
// simulation's) add no row of their own.
func TestActorRecorded(t *testing.T) {
	clk := &fakeClock{t: t0}
	rec := NewMemoryRecorder()
	svc, err := New(testConfig(), WithClock(clk.now), WithRecorder(rec), WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	as := ContextWithActor(t.Context(), "token:alice")
	if ActorFrom(t.Context()) != "" || ActorFrom(as) != "token:alice" {
		t.Fatal("ActorFrom")
	}
	j, err := svc.Submit(as, JobSpec{Team: "team-a", Queue: "a", GPUs: 2, Card: "H100-80GB"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Submit(as, JobSpec{Team: "team-b", Queue: "a", GPUs: 1}); err == nil {
		t.Fatal("team-b submitted to team-a's queue")
	}
	if _, err := svc.Finish(as, j.ID, schemas.StatusCancelled); err != nil {
		t.Fatal(err)
	}
	f := schemas.Finding{ID: "z1", Episode: 1, Kind: schemas.KindZombie, Node: "n1", PID: 7, Pool: "dev", Since: t0}
	if err := svc.AddFindings(as, []schemas.Finding{f}); err != nil {
		t.Fatal(err)
	}
	f.State = schemas.StateResolved
	if err := svc.AddFindings(as, []schemas.Finding{f}); err != nil {
		t.Fatal(err)
	}
	// The same calls without an actor.
	j2, err := svc.Submit(context.Background(), JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Finish(context.Background(), j2.ID, schemas.StatusSucceeded); err != nil {
		t.Fatal(err)
	}
	if err := svc.AddFindings(context.Background(), []schemas.Finding{f}); err != nil {
		t.Fatal(err)
	}
	rows, _ := rec.Actions(t.Context(), ActionFilter{})
	var got []string
	for _, r := range rows {
		got = append(got, r.Decision+" "+r.Actor+" "+r.Job+r.FindingID+" "+r.Reason)
	}
	want := []string{
		"submit token:alice sched/team-a/1 queued",
		`reject token:alice  queue or cluster not open to this team or project: queue a is team team-a's, not "team-b"`,
		"finish token:alice sched/team-a/1 reported cancelled",
		"push token:alice z1 finding pushed",
		"push token:alice z1 finding withdrawn (resolved)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rows:\n%q\nwant\n%q", got, want)
	}
	if r := rows[0]; r.Queue != "a" || r.Pool != "train" || r.Team != "team-a" || r.GPUs != 2 || r.Card != "H100-80GB" || r.Attempt != 1 {
		t.Errorf("submit row %+v", r)
	}
	if r := rows[3]; r.Node != "n1" || r.PID != 7 || r.FindingKind != string(schemas.KindZombie) || r.FindingEpisode != 1 {
		t.Errorf("push row %+v", r)
	}
	if rows[0].ID == rows[2].ID {
		t.Error("two rows share an ID")
	}
	if team, _ := rec.Actions(t.Context(), ActionFilter{Team: "team-a"}); len(team) != 2 {
		t.Errorf("team-a rows %+v", team)
	}
	if team, _ := rec.Actions(t.Context(), ActionFilter{Team: "team-b"}); len(team) != 1 || team[0].Decision != DecReject {
		t.Errorf("team-b rows %+v", team)
	}
}
