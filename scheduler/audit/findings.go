package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// StoreFindings reads the findings open now from the analyzer's findings_open view
// (schemas/migrations/0004_findings.sql), with the labels of each finding's job
// from the jobs view, for opt-out labels.
type StoreFindings struct {
	st Store
}

var _ scheduler.FindingSource = (*StoreFindings)(nil)

// NewStoreFindings returns a finding source over st.
func NewStoreFindings(st Store) *StoreFindings { return &StoreFindings{st: st} }

// Findings returns the open findings whose last sighting is not after now.
func (s *StoreFindings) Findings(ctx context.Context, now time.Time) ([]schemas.Finding, error) {
	db := s.st.Database()
	q := `SELECT f.id AS id, f.episode AS episode, f.kind AS kind, f.severity AS severity, f.job AS job, f.team AS team,
       f.project AS project, f.pool AS pool, f.cluster AS cluster, f.node AS node, f.pid AS pid, f.gpu_uuids AS gpu_uuids,
       f.card AS card, f.since AS since, f.first_seen AS first_seen, f.last_seen AS last_seen,
       f.recommendation AS recommendation, j.labels AS labels
FROM ` + db + `.findings_open AS f
LEFT JOIN (SELECT job, labels FROM ` + db + `.jobs) AS j ON j.job = f.job
WHERE f.first_seen <= {now:DateTime64(3, 'UTC')}
ORDER BY f.since, f.id`
	res, err := s.st.Query(ctx, q, store.Params{"now": now.UTC().Format(tsLayout)})
	if err != nil {
		return nil, fmt.Errorf("audit: read open findings: %w", err)
	}
	rows := store.Read(res, "findings_open with job labels")
	out := make([]schemas.Finding, 0, rows.Len())
	for rows.Next() {
		f := schemas.Finding{
			ID: rows.Str("id"), Episode: uint32(rows.Int("episode")), Kind: schemas.FindingKind(rows.Str("kind")), Severity: schemas.Severity(rows.Str("severity")),
			Job: rows.Str("job"), Team: rows.Str("team"), Project: rows.Str("project"), Pool: rows.Str("pool"),
			Cluster: rows.Str("cluster"), Node: rows.Str("node"), PID: uint32(rows.Int("pid")), Card: rows.Str("card"),
			Since: rows.Time("since"), FirstSeen: rows.Time("first_seen"), LastSeen: rows.Time("last_seen"),
			Recommendation: rows.Str("recommendation"),
		}
		// No GPUs and no labels stay nil, as before the reader (the LEFT JOIN's
		// missing job gives an empty map).
		if u := rows.Strs("gpu_uuids"); len(u) > 0 {
			f.GPUUUIDs = u
		}
		if m := rows.StrMap("labels"); len(m) > 0 {
			f.Labels = m
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: read open findings: %w", err)
	}
	return out, nil
}
