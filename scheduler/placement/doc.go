// Package placement decides where a job runs: on which nodes, which GPUs (by
// index) or which MIG slices, of a fleet the scheduler now sees node by node.
//
// In: a Fleet (clusters of nodes; a node's card type, GPU count, optional MIG
// layout and topology labels at ordered levels, finest first), the jobs placed so
// far with their expected ends, and requests (N GPUs, or N slices of a MIG
// profile, of one of a set of card types; optionally gpus_per_node, a topology
// level required or preferred, bin-pack or spread). Out: Placements naming nodes
// and GPU indices (or slices), and a Plan for a queue: which jobs start now,
// which hold a reservation (nodes, GPUs, expected start), and why each other job
// waits.
//
// The package is pure: no I/O, no clock (every time is a parameter), no
// randomness; the same calls give the same answers. A State is not safe for
// concurrent use. Times are time.Time; durations are time.Duration; GPU counts
// are whole GPUs, slice counts are MIG instances of one profile.
//
// The subpackage sim runs a week of a fleet under four admission strategies
// (today's GPU counting, best-effort FIFO, strict FIFO, reservation with
// backfill) on the same job stream; docs/placement.md has its table.
package placement
