package findings

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gpupool/gpupool/store"
)

// neighbourWindows are a pass's answers to neighboursSQL, one per window: the
// detectors that judge a job's activity over the same window (the hour-long
// hints, the two-hour ones) share one read of the process samples, over every
// GPU a running job holds, instead of one read each.
type neighbourWindows struct {
	mu sync.Mutex
	by map[time.Duration]*neighbourWindow
}

type neighbourWindow struct {
	once   sync.Once
	active map[string][]string // GPU → the jobs active on it during the window
	err    error
}

// neighbours returns, for each GPU a running job holds, the jobs whose
// processes were active on it during the window ending at the pass's time.
func (ps *pass) neighbours(ctx context.Context, q store.Querier, window time.Duration) (map[string][]string, error) {
	ps.nb.mu.Lock()
	if ps.nb.by == nil {
		ps.nb.by = map[time.Duration]*neighbourWindow{}
	}
	w := ps.nb.by[window]
	if w == nil {
		w = &neighbourWindow{}
		ps.nb.by[window] = w
	}
	ps.nb.mu.Unlock()
	w.once.Do(func() { w.active, w.err = queryNeighbours(ctx, q, ps, window) })
	return w.active, w.err
}

func queryNeighbours(ctx context.Context, q store.Querier, ps *pass, window time.Duration) (map[string][]string, error) {
	gpus := make([]string, 0, len(ps.holders))
	for u := range ps.holders {
		gpus = append(gpus, u)
	}
	slices.Sort(gpus)
	active := map[string][]string{}
	if len(gpus) == 0 {
		return active, nil
	}
	busy, err := q.Query(ctx, neighboursSQL, store.Params{
		"from": tsParam(ps.now.Add(-window)), "to": tsParam(ps.now), "gpus": arrayParam(gpus),
	})
	if err != nil {
		return nil, fmt.Errorf("neighbours: %w", err)
	}
	br := rowReader{res: busy}
	for i := range busy.Rows {
		active[br.str(i, "gpu_uuid")] = br.strings(i, "active_jobs")
	}
	if br.err != nil {
		return nil, fmt.Errorf("neighbours: %w", br.err)
	}
	return active, nil
}
