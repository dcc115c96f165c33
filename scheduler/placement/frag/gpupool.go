package frag

import "math/rand/v2"

// newGpupool is gpupool's policy: FGD's fragmentation growth, measured over the
// workload weighted by GPU demand rather than by task count (a stranded GPU
// matters in proportion to the GPU demand that cannot use it, and one 8-GPU task
// is eight one-GPU tasks' worth), with ties broken towards packing (GPUs and
// nodes already in use) so that whole GPUs and whole nodes stay free for gangs.
func newGpupool(w Workload, rng *rand.Rand) Policy {
	fc := newFragCache(w.ByGPUDemand())
	return &scored{name: Gpupool, rng: rng, score: func(c *Cluster, i int, s Shape, gpus []int) []float64 {
		return append([]float64{fragDelta(fc, &c.Nodes[i], s, gpus)}, packingScore(c, i, s, gpus)...)
	}}
}
