package frag

import "slices"

// Meter measures one replay as it runs, whoever places its jobs (this
// package's policies, or another scheduler driven over the same ReplayInput):
// it integrates the GPU capacity allocated between events and samples the
// stranded capacity at Samples evenly spaced times of the window. Times are
// replay seconds, GPU amounts milli-GPU.
type Meter struct {
	horizon float64
	samples int
	now     float64
	used    float64 // ∫ allocated dt over [0, horizon], milli-GPU·s
	strand  float64 // Σ stranded × sample step, milli-GPU·s
	sampled int
}

// NewMeter measures a window of horizon seconds with samples stranded-capacity
// samples.
func NewMeter(horizon float64, samples int) *Meter {
	return &Meter{horizon: horizon, samples: samples}
}

// Advance moves the meter to t: allocMilli was allocated since the previous
// call, and stranded (the stranded capacity now, in milli-GPU) is called once
// for each sample due before t, the cluster being as it was since then.
func (m *Meter) Advance(t float64, allocMilli int, stranded func() int) {
	h := m.horizon
	m.used += float64(allocMilli) * (min(t, h) - min(m.now, h))
	if m.samples > 0 {
		step := h / float64(m.samples)
		for ; m.sampled < m.samples && (float64(m.sampled)+0.5)*step < t; m.sampled++ {
			m.strand += float64(stranded()) * step
		}
	}
	m.now = t
}

// StrandedMilli is the free GPU capacity of c that none of the waiting shapes
// can use: Figure's StrandedMilli summed over GPU models.
func StrandedMilli(c *Cluster, waiting []Shape) int {
	total := 0
	for _, f := range Figure(c, waiting) {
		total += f.StrandedMilli
	}
	return total
}

// Run is the replay's row: utilisation and stranded GPU-hours as measured,
// waits and never-started counts from start (each job's start time in
// in.Jobs order, -1 when never started) on a cluster of gpus GPUs. A job
// never started waits until the horizon (a lower bound).
func (m *Meter) Run(policy, queue string, in *ReplayInput, start []float64, gpus int) ReplayRun {
	r := ReplayRun{Policy: policy, Queue: queue, Start: start}
	h := in.Horizon
	r.Utilisation = m.used / (float64(gpus*MilliGPU) * h)
	r.StrandedGPUHours = m.strand / MilliGPU / 3600
	waits := make([]float64, len(in.Jobs))
	for i, j := range in.Jobs {
		multi := j.Shape.GPUs > 1
		if multi {
			r.Multi++
		}
		waits[i] = start[i] - j.Arrive
		if start[i] < 0 {
			waits[i] = h - j.Arrive
			r.NeverStarted++
			if multi {
				r.MultiNeverStarted++
				if h-j.Arrive >= OldWait {
					r.MultiNeverStartedOld++
				}
			}
		}
	}
	slices.Sort(waits)
	r.WaitP50, r.WaitP95, r.WaitMax = quantile(waits, 0.5), quantile(waits, 0.95), quantile(waits, 1)
	return r
}
