package engine

import "github.com/gpupool/gpupool/scheduler/placement"

// Fragmentation is, per cluster and card type of the model's nodes, the free
// whole GPUs and the part no queued job's shape can use now
// (placement.State.Fragmentation over the queued jobs' requests; nil when the
// model lists no nodes). Held jobs count: they wait for GPUs too.
func (e *Engine) Fragmentation() []placement.Fragmentation {
	if e.place == nil {
		return nil
	}
	var waiting []placement.Compiled
	for _, q := range e.queues {
		for _, j := range q.pending {
			if j.State == StateQueued {
				waiting = append(waiting, j.req)
			}
		}
	}
	return e.place.st.Fragmentation(waiting)
}
