package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/store"
)

// Store is what the recorder needs of a store.
type Store interface {
	store.Querier
	Insert(ctx context.Context, table string, b *store.Block, token string) error
	Database() string
}

// StoreRecorder keeps the audit trail in the actions table. It is safe for
// concurrent use (each Record builds its own block).
type StoreRecorder struct {
	st Store
}

var _ scheduler.Recorder = (*StoreRecorder)(nil)

// NewStoreRecorder returns a recorder writing to st, whose schema must be
// migrated (0005_actions, 0006_actions_actor).
func NewStoreRecorder(st Store) *StoreRecorder { return &StoreRecorder{st: st} }

// tsLayout is how times are passed as DateTime64(3) query parameters.
const tsLayout = "2006-01-02 15:04:05.000"

// Record inserts rows as one block. The deduplication token is derived from the
// rows' IDs, so a retried Record stores nothing twice.
func (r *StoreRecorder) Record(ctx context.Context, rows []scheduler.Action) error {
	if len(rows) == 0 {
		return nil
	}
	var (
		ts                                    = store.NewDateTime64Ms("ts")
		id, reason, job, findingID            = store.NewString("id"), store.NewString("reason"), store.NewString("job"), store.NewString("finding_id")
		decision, outcome, policy             = store.NewLowCardinalityString("decision"), store.NewLowCardinalityString("outcome"), store.NewLowCardinalityString("policy")
		queue, pool, team, project            = store.NewLowCardinalityString("queue"), store.NewLowCardinalityString("pool"), store.NewLowCardinalityString("team"), store.NewLowCardinalityString("project")
		cluster, node, card, kind, executor   = store.NewLowCardinalityString("cluster"), store.NewLowCardinalityString("node"), store.NewLowCardinalityString("card"), store.NewLowCardinalityString("finding_kind"), store.NewLowCardinalityString("executor")
		actor                                 = store.NewLowCardinalityString("actor")
		step, tries, dryRun                   = store.NewUInt16("step"), store.NewUInt16("tries"), store.NewUInt8("dry_run")
		attempt, pid, gpus, borrowed, episode = store.NewUInt32("attempt"), store.NewUInt32("pid"), store.NewUInt32("gpus"), store.NewUInt32("borrowed_gpus"), store.NewUInt32("finding_episode")
		details                               = store.NewStringMap("details")
	)
	h := sha256.New()
	for _, a := range rows {
		h.Write([]byte(a.ID))
		ts.Append(a.Time.UnixMilli())
		id.Append(a.ID)
		reason.Append(a.Reason)
		job.Append(a.Job)
		findingID.Append(a.FindingID)
		decision.Append(a.Decision)
		outcome.Append(a.Outcome)
		policy.Append(a.Policy)
		queue.Append(a.Queue)
		pool.Append(a.Pool)
		team.Append(a.Team)
		project.Append(a.Project)
		cluster.Append(a.Cluster)
		node.Append(a.Node)
		card.Append(a.Card)
		kind.Append(a.FindingKind)
		executor.Append(a.Executor)
		step.Append(uint16(a.Step))
		tries.Append(uint16(a.Tries))
		dryRun.Append(boolNum(a.DryRun))
		attempt.Append(uint32(a.Attempt))
		pid.Append(a.PID)
		gpus.Append(uint32(a.GPUs))
		borrowed.Append(uint32(a.Borrowed))
		episode.Append(a.FindingEpisode)
		details.Append(a.Details)
		actor.Append(a.Actor)
	}
	b := store.NewBlock(ts, id, decision, outcome, reason, policy, step, job, attempt, queue, pool, team, project, cluster, node,
		pid, card, gpus, borrowed, findingID, episode, kind, executor, tries, dryRun, details, actor)
	token := "actions-" + hex.EncodeToString(h.Sum(nil)[:16])
	if err := r.st.Insert(ctx, "actions", b, token); err != nil {
		return fmt.Errorf("audit: record %d actions: %w", len(rows), err)
	}
	return nil
}

func boolNum(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// Actions reads rows back, one per id, oldest first.
func (r *StoreRecorder) Actions(ctx context.Context, f scheduler.ActionFilter) ([]scheduler.Action, error) {
	var where []string
	p := store.Params{}
	if !f.Since.IsZero() {
		where = append(where, "ts >= {since:DateTime64(3, 'UTC')}")
		p["since"] = f.Since.UTC().Format(tsLayout)
	}
	if !f.Until.IsZero() {
		where = append(where, "ts < {until:DateTime64(3, 'UTC')}")
		p["until"] = f.Until.UTC().Format(tsLayout)
	}
	if f.Job != "" {
		where = append(where, "(job = {job:String} OR startsWith(job, concat({job:String}, '/')))")
		p["job"] = f.Job
	}
	if f.Decision != "" {
		where = append(where, "decision = {decision:String}")
		p["decision"] = f.Decision
	}
	if f.Pool != "" {
		where = append(where, "pool = {pool:String}")
		p["pool"] = f.Pool
	}
	if f.Team != "" {
		where = append(where, "team = {team:String}")
		p["team"] = f.Team
	}
	if f.PoliciesOnly {
		where = append(where, "policy != ''")
	}
	q := "SELECT ts, id, decision, outcome, reason, policy, step, job, attempt, queue, pool, team, project, cluster, node, pid, " +
		"card, gpus, borrowed_gpus, finding_id, finding_episode, finding_kind, executor, tries, dry_run, details, actor FROM " +
		r.st.Database() + ".actions"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY ts DESC, id LIMIT 1 BY id"
	if f.Limit > 0 {
		q += " LIMIT " + strconv.Itoa(f.Limit)
	}
	res, err := r.st.Query(ctx, q, p)
	if err != nil {
		return nil, fmt.Errorf("audit: read actions: %w", err)
	}
	out, err := readActions(res)
	if err != nil {
		return nil, fmt.Errorf("audit: read actions: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// readActions turns result rows into actions.
func readActions(res *store.Result) ([]scheduler.Action, error) {
	rows := store.Read(res, "actions")
	out := make([]scheduler.Action, 0, rows.Len())
	for rows.Next() {
		a := scheduler.Action{
			ID: rows.Str("id"), Time: rows.Time("ts"), Decision: rows.Str("decision"), Outcome: rows.Str("outcome"), Reason: rows.Str("reason"),
			Policy: rows.Str("policy"), Step: int(rows.Int("step")), Job: rows.Str("job"), Attempt: int(rows.Int("attempt")),
			Queue: rows.Str("queue"), Pool: rows.Str("pool"), Team: rows.Str("team"), Project: rows.Str("project"),
			Cluster: rows.Str("cluster"), Node: rows.Str("node"), PID: uint32(rows.Int("pid")), Card: rows.Str("card"),
			GPUs: int(rows.Int("gpus")), Borrowed: int(rows.Int("borrowed_gpus")), FindingID: rows.Str("finding_id"),
			FindingEpisode: uint32(rows.Int("finding_episode")), FindingKind: rows.Str("finding_kind"),
			Executor: rows.Str("executor"), Tries: int(rows.Int("tries")), DryRun: rows.Bool("dry_run"),
			Actor: rows.Str("actor"),
		}
		if m := rows.StrMap("details"); len(m) > 0 { // no details stay nil, as before the reader
			a.Details = m
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
