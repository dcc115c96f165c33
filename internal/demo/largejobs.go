package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/internal/summary"
	"github.com/gpupool/gpupool/store"
)

// largeJobs is the fleet's jobs of 8 GPUs or more (their own systems' keys:
// the scheduler's stand-ins are left out), longest wait first, those never
// started on top; a wait is submit to start (in minutes).
const largeJobsSQL = `
SELECT job, cluster, pool, card, gpus, formatDateTime(submit_time, '%Y-%m-%d %H:%i') AS submitted,
       if(start_time IS NULL, 'not started',
          toString(round(dateDiff('second', submit_time, start_time) / 60, 1))) AS wait_min
FROM jobs
WHERE source != 'scheduler' AND gpus >= 8
  AND submit_time >= {from:DateTime64(3, 'UTC')} AND submit_time < {to:DateTime64(3, 'UTC')}
ORDER BY start_time IS NULL DESC, dateDiff('second', submit_time, coalesce(start_time, {to:DateTime64(3, 'UTC')})) DESC, job
LIMIT 30`

// neverStartedSQL counts the jobs submitted at least 6 h before the end that
// never started, and those of 8 GPUs or more.
const neverStartedSQL = `
SELECT countIf(start_time IS NULL) AS never_started, countIf(start_time IS NULL AND gpus >= 8) AS never_started_8plus,
       count() AS submitted
FROM jobs
WHERE source != 'scheduler' AND submit_time >= {from:DateTime64(3, 'UTC')} AND submit_time < {cut:DateTime64(3, 'UTC')}`

// largeJobWaits is the summary's section on large jobs' waits.
func largeJobWaits(ctx context.Context, st store.Store, from, to time.Time) (summary.Section, error) {
	res, err := st.Query(ctx, largeJobsSQL, store.Params{"from": analyzer.TimeParam(from), "to": analyzer.TimeParam(to)})
	if err != nil {
		return summary.Section{}, fmt.Errorf("demo: large jobs' waits: %w", err)
	}
	return summary.Section{Title: "Large jobs (8 GPUs or more): queue wait, submit to start (minutes)", Table: res}, nil
}

// writeNeverStarted prints how many jobs submitted at least 6 h before the end
// never started.
func writeNeverStarted(ctx context.Context, w io.Writer, st store.Store, from, to time.Time) error {
	cut := to.Add(-6 * time.Hour)
	res, err := st.Query(ctx, neverStartedSQL, store.Params{"from": analyzer.TimeParam(from), "cut": analyzer.TimeParam(cut)})
	if err != nil {
		return fmt.Errorf("demo: jobs never started: %w", err)
	}
	if res == nil || len(res.Rows) == 0 {
		return nil
	}
	r := res.Rows[0]
	_, err = fmt.Fprintf(w, "\nJobs submitted 6 h or more before the end (%s): %v; never started: %v (8 GPUs or more: %v)\n",
		cut.Format("15:04"), r[2], r[0], r[1])
	return err
}
