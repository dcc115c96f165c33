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
	col := map[string]int{}
	for i, c := range res.Columns {
		col[c.Name] = i
	}
	str := func(row []any, name string) string { return store.FormatValue(row[col[name]]) }
	tm := func(row []any, name string) time.Time {
		t, _ := row[col[name]].(time.Time)
		return t.UTC()
	}
	out := make([]schemas.Finding, 0, len(res.Rows))
	for i, row := range res.Rows {
		episode, _ := res.Int(i, "episode")
		pid, _ := res.Int(i, "pid")
		f := schemas.Finding{
			ID: str(row, "id"), Episode: uint32(episode), Kind: schemas.FindingKind(str(row, "kind")), Severity: schemas.Severity(str(row, "severity")),
			Job: str(row, "job"), Team: str(row, "team"), Project: str(row, "project"), Pool: str(row, "pool"),
			Cluster: str(row, "cluster"), Node: str(row, "node"), PID: uint32(pid), Card: str(row, "card"),
			Since: tm(row, "since"), FirstSeen: tm(row, "first_seen"), LastSeen: tm(row, "last_seen"),
			Recommendation: str(row, "recommendation"),
		}
		if a, ok := row[col["gpu_uuids"]].([]any); ok {
			for _, u := range a {
				f.GPUUUIDs = append(f.GPUUUIDs, store.FormatValue(u))
			}
		}
		if m, ok := row[col["labels"]].(map[string]any); ok && len(m) > 0 {
			f.Labels = make(map[string]string, len(m))
			for k, v := range m {
				f.Labels[k] = store.FormatValue(v)
			}
		}
		out = append(out, f)
	}
	return out, nil
}
