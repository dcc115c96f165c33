package scheduler

import (
	"context"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// The API's calls carry who made them (ContextWithActor); the changes they ask
// for are then written to the audit trail with that actor: a submit, a finish or
// cancel, a finding pushed or withdrawn. In-process callers (the simulation)
// carry none, and only the decisions their calls lead to are recorded, as before.

type actorKey struct{}

// ContextWithActor returns ctx carrying actor, who asks for what the call does
// (auth's method:name, e.g. token:alice).
func ContextWithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom is the actor ctx carries ("" : none).
func ActorFrom(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}

// jobRow is an audit row about job j, decided by actor at now.
func jobRow(j *Job, decision, reason, actor string, now time.Time) Action {
	return Action{Time: now, Decision: decision, Outcome: OutcomeOK, Reason: reason, Job: j.AttemptKey(), Attempt: j.Attempt,
		Queue: j.Spec.Queue, Pool: j.Pool, Team: j.Spec.Team, Project: j.Spec.Project, Cluster: j.Cluster,
		Card: cardOf(j), GPUs: j.Spec.GPUs, Actor: actor}
}

// cardOf is the card a job holds, else the one it asked for.
func cardOf(j *Job) string {
	if j.Card != "" {
		return j.Card
	}
	return j.Spec.Card
}

// pushRows are the audit rows of findings an actor pushed at now.
func pushRows(fs []schemas.Finding, actor string, now time.Time) []Action {
	rows := make([]Action, 0, len(fs))
	for _, f := range fs {
		reason := "finding pushed"
		if f.Resolved() {
			reason = "finding withdrawn (resolved)"
		}
		rows = append(rows, Action{Time: now, Decision: DecPush, Outcome: OutcomeOK, Reason: reason, Job: f.Job,
			Pool: f.Pool, Team: f.Team, Project: f.Project, Cluster: f.Cluster, Node: f.Node, PID: f.PID, Card: f.Card,
			FindingID: f.ID, FindingEpisode: f.Episode, FindingKind: string(f.Kind), Actor: actor})
	}
	return rows
}
