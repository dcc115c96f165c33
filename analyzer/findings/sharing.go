package findings

import (
	"fmt"
	"math"
)

// Sharing methods a low-memory, low-compute job may be moved to, in the order
// sharingFor tries them.
const (
	// ShareMIG: a MIG instance of the job's card (hardware-partitioned memory and
	// compute; the card must be MIG-capable and the profile configured).
	ShareMIG = "mig"
	// ShareMPS: an MPS client among several on one GPU, its SMs capped with
	// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and its memory with
	// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT. Kernels run concurrently, so it suits a
	// job that keeps the GPU a little busy all the time.
	ShareMPS = "mps"
	// ShareTimeSlicing: a time-slicing replica (device-plugin replicas, or Slurm
	// shards): tenants take turns on the whole GPU, with no memory isolation. It
	// suits a bursty job, busy a small part of the time.
	ShareTimeSlicing = "time-slicing"
)

// shareComputeHeadroom is the margin sharing leaves over what a job uses: its
// compute share and its busy time × this.
const shareComputeHeadroom = 1.5

// steadyActiveFraction: a job active at least this share of its samples is steady
// (MPS); below, bursty (time-slicing).
const steadyActiveFraction = 0.5

// shareUse is what sharingFor judges of one job: its card, its peak memory with
// headroom, its SM activity p95 over all its samples and over its busy samples
// alone, and the share of samples it was busy.
type shareUse struct {
	card                string
	memNeedMiB, cardMiB float64
	smP95, busySMP95    float64
	activeFraction      float64
}

// sharing is how a job could share its GPU: with whom (tenants per GPU), at what
// share of a GPU, and why when nothing fits (method "").
type sharing struct {
	method, name string
	tenants      int
	// share is the part of a GPU the job would hold: slices / 7, or 1 / tenants.
	share float64
	why   string
}

// frees is the part of each GPU the job holds that sharing gives back.
func (s sharing) frees() float64 {
	if s.method == "" {
		return 0
	}
	return 1 - s.share
}

// sharingFor picks how a job that uses little of a whole GPU could share it:
//   - a MIG profile of its card (from options) that holds its memory need and
//     whose slices cover its busy SM p95 × headroom (a MIG instance's compute is
//     fixed, so its bursts must fit too): the smallest such;
//   - else MPS, for a steady job (busy in at least half its samples): as many
//     clients as the card's memory holds needs and its SM p95 × headroom divides
//     the GPU into, at most maxTimeSlices;
//   - else time-slicing, for a bursty job: as many replicas as memory holds and its
//     busy share × headroom leaves turns for, at most maxTimeSlices;
//   - else nothing (fewer than 2 tenants fit).
func sharingFor(u shareUse, options []CardOption) sharing {
	var best *CardOption
	for i := range options {
		o := &options[i]
		if o.Card != u.card || o.Slices == 0 || float64(o.MemoryMiB) < u.memNeedMiB ||
			float64(o.Slices)/7 < u.busySMP95*shareComputeHeadroom {
			continue
		}
		if best == nil || o.Slices < best.Slices {
			best = o
		}
	}
	if best != nil {
		return sharing{method: ShareMIG, name: best.name(), tenants: 7 / best.Slices, share: float64(best.Slices) / 7}
	}
	byMem := maxTimeSlices
	if u.memNeedMiB > 0 {
		byMem = min(byMem, int(u.cardMiB/u.memNeedMiB))
	}
	if u.activeFraction >= steadyActiveFraction {
		k := min(byMem, int(1/math.Max(u.smP95*shareComputeHeadroom, 1e-9)))
		if k >= 2 {
			return sharing{method: ShareMPS, tenants: k, share: 1 / float64(k),
				name: fmt.Sprintf("MPS, %d clients per GPU (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=%dM)",
					k, 100/k, int(math.Ceil(u.memNeedMiB)))}
		}
		return sharing{why: fmt.Sprintf("steady at SM %.0f%% (p95) with %.1f GiB: fewer than 2 MPS clients fit", 100*u.smP95, u.memNeedMiB/1024)}
	}
	k := min(byMem, int(1/math.Max(u.activeFraction*shareComputeHeadroom, 1e-9)))
	if k >= 2 {
		return sharing{method: ShareTimeSlicing, tenants: k, share: 1 / float64(k),
			name: fmt.Sprintf("time-slicing, %d replicas per GPU (cap its memory to %.1f GiB: replicas share the memory)", k, u.memNeedMiB/1024)}
	}
	return sharing{why: fmt.Sprintf("busy %.0f%% of the time with %.1f GiB: fewer than 2 time-slicing replicas fit", 100*u.activeFraction, u.memNeedMiB/1024)}
}
