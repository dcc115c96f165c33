package findings

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/store"
)

// neighboursSQL lists, per GPU, the jobs whose processes were active on it (SM
// share above 1 %) during each window (%s: one groupUniqArrayIf per window, from
// {from_<k>}): a GPU another job was active on mixes that job's activity into its
// samples. A zombie beside a new job does not count (it does nothing), nor do
// processes without a figure of their own. One read of the longest window answers
// every window the hint detectors judge.
const neighboursSQL = `
SELECT gpu_uuid, %s
FROM process_samples
WHERE ts > {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
  AND gpu_uuid IN {gpus:Array(String)} AND job != '' AND sm_util > 0.01
GROUP BY gpu_uuid`

// queryNeighbours returns, for each of windows (ending at the pass's time) and
// each GPU a running job holds, the jobs whose processes were active on it
// during the window.
func queryNeighbours(ctx context.Context, q store.Querier, ps *pass, windows []time.Duration) ([]map[string][]string, error) {
	out := make([]map[string][]string, len(windows))
	for k := range out {
		out[k] = map[string][]string{}
	}
	gpus := make([]string, 0, len(ps.holders))
	for u := range ps.holders {
		gpus = append(gpus, u)
	}
	slices.Sort(gpus)
	if len(gpus) == 0 || len(windows) == 0 {
		return out, nil
	}
	p := store.Params{"to": tsParam(ps.now), "gpus": arrayParam(gpus), "from": tsParam(ps.now.Add(-slices.Max(windows)))}
	cols := make([]string, len(windows))
	for k, w := range windows {
		p["from_"+strconv.Itoa(k)] = tsParam(ps.now.Add(-w))
		cols[k] = fmt.Sprintf("groupUniqArrayIf(job, ts > {from_%d:DateTime64(3, 'UTC')}) AS active_%d", k, k)
	}
	busy, err := q.Query(ctx, fmt.Sprintf(neighboursSQL, strings.Join(cols, ", ")), p)
	if err != nil {
		return nil, fmt.Errorf("neighbours: %w", err)
	}
	br := rowReader{res: busy}
	for i := range busy.Rows {
		u := br.str(i, "gpu_uuid")
		for k := range windows {
			if jobs := br.strings(i, "active_"+strconv.Itoa(k)); len(jobs) > 0 {
				out[k][u] = jobs
			}
		}
	}
	if br.err != nil {
		return nil, fmt.Errorf("neighbours: %w", br.err)
	}
	return out, nil
}
