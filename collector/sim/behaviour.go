package sim

import "math"

// act is what a job does on one of its GPUs (or MIG instances) during one tick.
type act struct {
	gr, sm, occ, tensor, dram float32
	rxBytesPerS, txBytesPerS  float32
	// memScale is the fraction of the job's memory allocated so far (a data
	// loader fills memory gradually).
	memScale float32
}

const dayMs = 24 * 3600 * 1000

// activity is job j's activity on one GPU at atMs. It reads the job and never
// writes it, because a multi-node job's nodes are sampled concurrently; the noise
// stream is the caller's.
func (j *job) activity(atMs, tickMs, utcOffsetMs int64, nz *noise) act {
	el := atMs - j.startMs
	if j.hangMs > 0 && el >= j.hangMs {
		return j.hung(nz)
	}
	switch j.kind {
	case kindTraining:
		return j.training(el, nz)
	case kindOnline:
		return j.online(atMs, utcOffsetMs, nz)
	case kindNotebook:
		return j.notebook(el, tickMs, nz)
	case kindWrongCard:
		if j.burstPeriodMs > 0 && el%j.burstPeriodMs >= j.burstOnMs {
			return act{rxBytesPerS: nz.between(1e3, 20e3), txBytesPerS: nz.between(1e3, 10e3), memScale: 1}
		}
	case kindLowUtil:
		a := j.prof.steady(nz)
		// Occasional short bursts keep it from looking idle while the median
		// stays low.
		if nz.unit() < 0.1 {
			a.gr, a.sm, a.tensor = clamp01(a.gr*2), clamp01(a.sm*2), clamp01(a.tensor*2)
		}
		return a
	}
	return j.prof.steady(nz)
}

// hung is a hung training job: a collective that never completes keeps a kernel
// spinning (engine ~100 %, SM low, no tensor, DRAM or PCIe traffic), or the host
// side hung and nothing runs at all; memory stays held either way.
func (j *job) hung(nz *noise) act {
	if j.hangHost {
		return act{rxBytesPerS: nz.between(1e3, 10e3), txBytesPerS: nz.between(1e3, 10e3), memScale: 1}
	}
	return act{
		gr: nz.between(0.97, 0.995), sm: nz.between(0.02, 0.06), occ: nz.between(0.01, 0.03),
		dram: nz.between(0, 0.005), rxBytesPerS: nz.between(1e3, 20e3), txBytesPerS: nz.between(1e3, 20e3), memScale: 1,
	}
}

// steady is a job at its base levels with relative jitter.
func (p *profile) steady(nz *noise) act {
	j := p.jitter
	return act{
		gr:          min(clamp01(p.gr*(1+j*nz.tri())), 0.995),
		sm:          clamp01(p.sm * (1 + j*nz.tri())),
		occ:         clamp01(p.occ * (1 + j*nz.tri())),
		tensor:      clamp01(p.tensor * (1 + j*nz.tri())),
		dram:        clamp01(p.dram * (1 + j*nz.tri())),
		rxBytesPerS: p.rxBytesPerS * (1 + 0.2*nz.tri()),
		txBytesPerS: p.txBytesPerS * (1 + 0.2*nz.tri()),
		memScale:    1,
	}
}

// training adds two phases to a steady profile: an optional data-loading phase at
// the start (compute nearly idle, PCIe busy, memory filling: working, not idle)
// and a short checkpoint dip at the end of every checkpoint interval (compute
// pauses while the model is written out over PCIe).
func (j *job) training(el int64, nz *noise) act {
	if el < j.loadMs {
		progress := float32(el) / float32(j.loadMs)
		return act{
			gr: nz.between(0.005, 0.04), sm: nz.between(0.002, 0.03), occ: nz.between(0.01, 0.05),
			dram:        nz.between(0.01, 0.05),
			rxBytesPerS: nz.between(2e9, 6e9), txBytesPerS: nz.between(5e6, 30e6),
			memScale: 0.1 + 0.9*progress,
		}
	}
	if j.ckptEveryMs > 0 && (el-j.loadMs)%j.ckptEveryMs >= j.ckptEveryMs-j.ckptLenMs {
		return act{
			gr: nz.between(0.03, 0.08), sm: nz.between(0.01, 0.04), occ: nz.between(0.02, 0.06),
			dram:        nz.between(0.05, 0.1),
			rxBytesPerS: nz.between(1e6, 10e6), txBytesPerS: nz.between(1.5e9, 4e9),
			memScale: 1,
		}
	}
	return j.prof.steady(nz)
}

// online follows the cluster's local day: traffic is lowest around 04:00 and
// highest around 16:00, with five-minute bursts during the day, and never drops to
// zero (health checks and a trickle of requests keep the engine busy).
func (j *job) online(atMs, utcOffsetMs int64, nz *noise) act {
	local := ((atMs+utcOffsetMs)%dayMs + dayMs) % dayMs
	hour := float64(local) / 3.6e6
	day := float32(0.5 - 0.5*math.Cos(2*math.Pi*(hour-4)/24))
	level := j.prof.night + (j.prof.gr-j.prof.night)*day
	if h := mix64(j.salt ^ uint64(atMs/minutes(5))); h%1000 < uint64(60+100*day) {
		level *= 1.5 + float32(h>>20%700)/1000
	}
	level = min(max(level*(1+j.prof.jitter*nz.tri()), 0.02), 0.6)
	return act{
		gr: level, sm: level * 0.75, occ: 0.1 + 0.3*level, tensor: level * 0.5, dram: 0.02 + 0.6*level,
		rxBytesPerS: 1e6 + level*300e6*(1+0.2*nz.tri()), txBytesPerS: 0.5e6 + level*150e6*(1+0.2*nz.tri()),
		memScale: 1,
	}
}

// notebook is busy in its active segments and idle (holding its memory) in the
// others, except for a single-tick spike every spikeEveryMs of an idle segment
// (someone runs a cell) that must not count as the end of the idle stretch.
func (j *job) notebook(el, tickMs int64, nz *noise) act {
	var seg segment
	for _, s := range j.segs {
		if el < s.toMs {
			seg = s
			break
		}
	}
	if !seg.idle {
		a := j.prof.steady(nz)
		return a
	}
	since := el - seg.fromMs
	if since >= j.spikeEveryMs && since%j.spikeEveryMs < tickMs {
		return act{
			gr: nz.between(0.3, 0.6), sm: nz.between(0.2, 0.4), occ: nz.between(0.1, 0.3),
			tensor: nz.between(0, 0.1), dram: nz.between(0.05, 0.2),
			rxBytesPerS: nz.between(5e6, 50e6), txBytesPerS: nz.between(1e6, 10e6), memScale: 1,
		}
	}
	return act{rxBytesPerS: nz.between(1e3, 20e3), txBytesPerS: nz.between(1e3, 10e3), memScale: 1}
}
