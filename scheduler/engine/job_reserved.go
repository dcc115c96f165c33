package engine

import "github.com/gpupool/gpupool/scheduler/placement"

// reservedNodes is the nodes and GPUs d's reservation holds (nil: none): a
// queued job's Job.Reserved, shown by the API, `jobs ls` and the console.
func reservedNodes(d placement.Decision) []placement.NodeAlloc {
	if d.Reservation == nil {
		return nil
	}
	return d.Reservation.Placement.Nodes()
}
