package findings

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Table is the table findings are written to (migration 0004).
const Table = "findings"

// findingColumns are the findings table's columns in the order versions are read.
// Every column is the latest version's (argMax by updated_at), so an unmerged
// ReplacingMergeTree reads exactly as a merged one.
const findingColumns = `
    argMax(kind, updated_at) AS kind_, argMax(state, updated_at) AS state_, argMax(episode, updated_at) AS episode_,
    argMax(severity, updated_at) AS severity_, argMax(cluster, updated_at) AS cluster_, argMax(node, updated_at) AS node_,
    argMax(job, updated_at) AS job_, argMax(team, updated_at) AS team_, argMax(project, updated_at) AS project_,
    argMax(pool, updated_at) AS pool_, argMax(card, updated_at) AS card_, argMax(gpu_uuids, updated_at) AS gpu_uuids_,
    argMax(pid, updated_at) AS pid_, argMax(since, updated_at) AS since_, argMax(first_seen, updated_at) AS first_seen_,
    argMax(last_seen, updated_at) AS last_seen_, argMax(resolved_at, updated_at) AS resolved_at_,
    max(updated_at) AS updated_at_, argMax(waste_gpu_hours, updated_at) AS waste_gpu_hours_,
    argMax(waste_cost, updated_at) AS waste_cost_, argMax(currency, updated_at) AS currency_,
    argMax(evidence, updated_at) AS evidence_, argMax(recommended, updated_at) AS recommended_,
    argMax(recommendation, updated_at) AS recommendation_`

// openSQL reads every finding whose latest version at {now} is not resolved.
const openSQL = `SELECT id,` + findingColumns + `
FROM ` + Table + `
WHERE updated_at <= {now:DateTime64(3, 'UTC')}
GROUP BY id
HAVING state_ != 'resolved'
ORDER BY id`

// historySQL reads the latest version of every episode that opened in
// [{from}, {to}].
const historySQL = `SELECT id,` + findingColumns + `
FROM ` + Table + `
WHERE first_seen >= {from:DateTime64(3, 'UTC')} AND first_seen <= {to:DateTime64(3, 'UTC')}
GROUP BY id, episode
ORDER BY first_seen_, id`

// episodesSQL reads the last episode of findings seen before.
const episodesSQL = `SELECT id, max(episode) AS episode FROM ` + Table + `
WHERE id IN {ids:Array(String)} GROUP BY id`

// readFindings turns rows of findingColumns into findings.
func readFindings(res *store.Result) ([]schemas.Finding, error) {
	r := rowReader{res: res}
	out := make([]schemas.Finding, 0, len(res.Rows))
	for i := range res.Rows {
		f := schemas.Finding{
			ID: r.str(i, "id"), Kind: schemas.FindingKind(r.str(i, "kind_")), State: schemas.FindingState(r.str(i, "state_")),
			Episode: uint32(r.int(i, "episode_")), Severity: schemas.Severity(r.str(i, "severity_")),
			Cluster: r.str(i, "cluster_"), Node: r.str(i, "node_"), Job: r.str(i, "job_"), Team: r.str(i, "team_"),
			Project: r.str(i, "project_"), Pool: r.str(i, "pool_"), Card: r.str(i, "card_"),
			GPUUUIDs: r.strings(i, "gpu_uuids_"), PID: uint32(r.int(i, "pid_")),
			Since: r.time(i, "since_"), FirstSeen: r.time(i, "first_seen_"), LastSeen: r.time(i, "last_seen_"),
			ResolvedAt: r.time(i, "resolved_at_"), UpdatedAt: r.time(i, "updated_at_"),
			WasteGPUHours: r.float(i, "waste_gpu_hours_"), WasteCost: r.float(i, "waste_cost_"),
			Currency: r.str(i, "currency_"), Recommended: r.str(i, "recommended_"),
			Recommendation: r.str(i, "recommendation_"), Evidence: map[string]float64{},
		}
		if j := res.Index("evidence_"); j >= 0 {
			m, _ := res.Rows[i][j].(map[string]any)
			for k, v := range m {
				if x, ok := v.(float64); ok {
					f.Evidence[k] = x
				}
			}
		}
		out = append(out, f)
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// loadOpen reads the findings open at now, by id.
func (a *Analyzer) loadOpen(ctx context.Context, now time.Time) (map[string]schemas.Finding, error) {
	res, err := a.q.Query(ctx, openSQL, store.Params{"now": tsParam(now)})
	if err != nil {
		return nil, err
	}
	fs, err := readFindings(res)
	if err != nil {
		return nil, err
	}
	out := make(map[string]schemas.Finding, len(fs))
	for _, f := range fs {
		out[f.ID] = f
	}
	return out, nil
}

// lastEpisodes returns the last episode of each of ids seen before (absent: never).
func (a *Analyzer) lastEpisodes(ctx context.Context, ids []string) (map[string]uint32, error) {
	out := map[string]uint32{}
	if len(ids) == 0 {
		return out, nil
	}
	res, err := a.q.Query(ctx, episodesSQL, store.Params{"ids": arrayParam(ids)})
	if err != nil {
		return nil, err
	}
	r := rowReader{res: res}
	for i := range res.Rows {
		out[r.str(i, "id")] = uint32(r.int(i, "episode"))
	}
	return out, r.err
}

// History returns the latest version of every finding episode that opened in
// [from, to], in order of first_seen: what `gpupool analyze` prints and what the
// scoring harness scores.
func (a *Analyzer) History(ctx context.Context, from, to time.Time) ([]schemas.Finding, error) {
	res, err := a.q.Query(ctx, historySQL, store.Params{"from": tsParam(from), "to": tsParam(to)})
	if err != nil {
		return nil, fmt.Errorf("findings: read history: %w", err)
	}
	fs, err := readFindings(res)
	if err != nil {
		return nil, fmt.Errorf("findings: read history: %w", err)
	}
	return fs, nil
}

// write inserts finding versions as one block. The deduplication token is derived
// from the pass time and the versions, so a pass retried after a failed insert
// cannot write its versions twice.
func (a *Analyzer) write(ctx context.Context, now time.Time, vs []schemas.Finding) error {
	if len(vs) == 0 {
		return nil
	}
	str := func(name string) *store.StringCol { return store.NewString(name) }
	id, kind, state, sev, cluster, node, job := str("id"), str("kind"), str("state"), str("severity"), str("cluster"), str("node"), str("job")
	team, project, pool, card, currency, recd, rec := str("team"), str("project"), str("pool"), str("card"), str("currency"), str("recommended"), str("recommendation")
	episode, pid := store.NewUInt32("episode"), store.NewUInt32("pid")
	gpus := store.NewStringArray("gpu_uuids")
	since, first, last, updated := store.NewDateTime64Ms("since"), store.NewDateTime64Ms("first_seen"), store.NewDateTime64Ms("last_seen"), store.NewDateTime64Ms("updated_at")
	resolved := &nullableTimeCol{name: "resolved_at"}
	wasteH, wasteC := &float64Col{name: "waste_gpu_hours"}, &float64Col{name: "waste_cost"}
	ev := &floatMapCol{name: "evidence"}
	h := sha256.New()
	for i := range vs {
		f := &vs[i]
		id.Append(f.ID)
		kind.Append(string(f.Kind))
		state.Append(string(f.State))
		sev.Append(string(f.Severity))
		cluster.Append(f.Cluster)
		node.Append(f.Node)
		job.Append(f.Job)
		team.Append(f.Team)
		project.Append(f.Project)
		pool.Append(f.Pool)
		card.Append(f.Card)
		currency.Append(f.Currency)
		recd.Append(f.Recommended)
		rec.Append(f.Recommendation)
		episode.Append(f.Episode)
		pid.Append(f.PID)
		gpus.Append(f.GPUUUIDs)
		since.Append(f.Since.UnixMilli())
		first.Append(f.FirstSeen.UnixMilli())
		last.Append(f.LastSeen.UnixMilli())
		updated.Append(f.UpdatedAt.UnixMilli())
		resolved.append(f.ResolvedAt)
		wasteH.data = append(wasteH.data, f.WasteGPUHours)
		wasteC.data = append(wasteC.data, f.WasteCost)
		ev.data = append(ev.data, f.Evidence)
		fmt.Fprintf(h, "%s/%s/%d/%g\n", f.ID, f.State, f.Episode, f.WasteGPUHours)
	}
	b := store.NewBlock(id, kind, state, episode, sev, cluster, node, job, team, project, pool, card, gpus, pid,
		since, first, last, resolved, updated, wasteH, wasteC, currency, ev, recd, rec)
	token := fmt.Sprintf("findings/%d/%s", now.UnixMilli(), hex.EncodeToString(h.Sum(nil)[:12]))
	if err := a.q.Insert(ctx, Table, b, token); err != nil {
		return err
	}
	return nil
}

// The store package has no Float64, Map(String, Float64) or Nullable(DateTime64)
// column; these three implement store.Column for the findings table alone.

// float64Col is a Float64 column.
type float64Col struct {
	name string
	data []float64
}

var _ store.Column = (*float64Col)(nil)

func (c *float64Col) Name() string { return c.name }
func (c *float64Col) Type() string { return "Float64" }
func (c *float64Col) Len() int     { return len(c.data) }
func (c *float64Col) Reset()       { c.data = c.data[:0] }
func (c *float64Col) Values() any  { return c.data }
func (c *float64Col) AppendNative(dst []byte) []byte {
	for _, v := range c.data {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return dst
}

// floatMapCol is a Map(String, Float64) column; keys are sent sorted, so equal maps
// encode to equal bytes (insert deduplication hashes them).
type floatMapCol struct {
	name string
	data []map[string]float64
}

var _ store.Column = (*floatMapCol)(nil)

func (c *floatMapCol) Name() string { return c.name }
func (c *floatMapCol) Type() string { return "Map(String, Float64)" }
func (c *floatMapCol) Len() int     { return len(c.data) }
func (c *floatMapCol) Reset()       { c.data = c.data[:0] }
func (c *floatMapCol) Values() any  { return c.data }
func (c *floatMapCol) AppendNative(dst []byte) []byte {
	// Map(K, V) is Array(Tuple(K, V)): end offsets, then every key, then every value.
	keys := make([][]string, len(c.data))
	off := uint64(0)
	for i, m := range c.data {
		keys[i] = slices.Sorted(maps.Keys(m))
		off += uint64(len(keys[i]))
		dst = binary.LittleEndian.AppendUint64(dst, off)
	}
	for _, ks := range keys {
		for _, k := range ks {
			dst = binary.AppendUvarint(dst, uint64(len(k)))
			dst = append(dst, k...)
		}
	}
	for i, ks := range keys {
		for _, k := range ks {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(c.data[i][k]))
		}
	}
	return dst
}

// nullableTimeCol is a Nullable(DateTime64(3, 'UTC')) column; the zero time is NULL.
type nullableTimeCol struct {
	name string
	data []time.Time
}

var _ store.Column = (*nullableTimeCol)(nil)

func (c *nullableTimeCol) append(t time.Time) { c.data = append(c.data, t) }
func (c *nullableTimeCol) Name() string       { return c.name }
func (c *nullableTimeCol) Type() string       { return "Nullable(DateTime64(3, 'UTC'))" }
func (c *nullableTimeCol) Len() int           { return len(c.data) }
func (c *nullableTimeCol) Reset()             { c.data = c.data[:0] }

// Values returns []*time.Time with nil for NULL, which clickhouse-go takes.
func (c *nullableTimeCol) Values() any {
	out := make([]*time.Time, len(c.data))
	for i := range c.data {
		if !c.data[i].IsZero() {
			out[i] = &c.data[i]
		}
	}
	return out
}

func (c *nullableTimeCol) AppendNative(dst []byte) []byte {
	for _, t := range c.data {
		dst = append(dst, boolByte(t.IsZero()))
	}
	for _, t := range c.data {
		ms := int64(0)
		if !t.IsZero() {
			ms = t.UnixMilli()
		}
		dst = binary.LittleEndian.AppendUint64(dst, uint64(ms))
	}
	return dst
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}
