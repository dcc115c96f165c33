package findings

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Pool names as DESIGN.md gives them; only inference-online has a built-in policy
// of its own (see builtinPool).
const (
	PoolTrainingExp     = "training-exp"
	PoolTrainingProd    = "training-prod"
	PoolInferenceOnline = "inference-online"
	PoolInferenceBatch  = "inference-batch"
	PoolDev             = "dev"
)

// Config configures the analyzer. Thresholds are per pool: a pool's thresholds are
// Defaults, then the built-in policy for that pool (inference-online has one), then
// what Pools says for it.
type Config struct {
	// Interval is how often the caller (the scheduler loop of `gpupool analyzer`,
	// the demo) runs a pass. Run itself never waits: it analyses the window ending
	// at the time it is given.
	Interval time.Duration `yaml:"interval"`
	// HintInterval is how often the hint detectors (memory_bound, wrong_card,
	// low_util) run: their windows are hours long and their exact quantiles the
	// costliest queries, so running them on every pass would buy nothing. Passes in
	// between leave hint findings as they are.
	HintInterval time.Duration `yaml:"hint_interval"`
	// ResolveAfter is how long a finding must go unseen before it is resolved; a
	// shorter gap (a notebook cell run once, a pass that missed a beat) keeps it open.
	ResolveAfter time.Duration `yaml:"resolve_after"`
	// CriticalWasteGPUHours escalates an idle, zombie or wrong-card finding from
	// warning to critical once its waste reaches this many GPU-hours.
	CriticalWasteGPUHours float64 `yaml:"critical_waste_gpu_hours"`
	// MinCoverage is the share of a window that samples must span for a detector
	// to judge it: a GPU whose collector was down half the window is not judged.
	MinCoverage float64 `yaml:"min_coverage"`
	// MinSamples is the fewest samples a window needs to be judged.
	MinSamples int `yaml:"min_samples"`
	// CardOptions are the smaller cards and MIG profiles wrong_card may recommend.
	CardOptions []CardOption `yaml:"card_options"`
	// Defaults are the thresholds of every pool without its own.
	Defaults Thresholds `yaml:"defaults"`
	// Pools holds the thresholds of pools that differ from Defaults. In YAML, a pool
	// lists only what it changes.
	Pools map[string]Thresholds `yaml:"pools"`
}

// Thresholds are one pool's detector settings.
type Thresholds struct {
	Idle IdleConfig `yaml:"idle"`
	// Shared judges idleness per tenant on GPUs several jobs share.
	Shared      SharedConfig      `yaml:"shared"`
	Zombie      ZombieConfig      `yaml:"zombie"`
	Hung        HungConfig        `yaml:"hung"`
	MemoryBound MemoryBoundConfig `yaml:"memory_bound"`
	// MemoryCapacity is memory_capacity: memory full, compute low.
	MemoryCapacity MemoryCapacityConfig `yaml:"memory_capacity"`
	WrongCard      WrongCardConfig      `yaml:"wrong_card"`
	LowUtil        LowUtilConfig        `yaml:"low_util"`
	ComputeBound   ComputeBoundConfig   `yaml:"compute_bound"`
}

// IdleConfig: a running job whose GPUs were active in less than MaxActiveFraction of
// the samples of Window, and showed memory or PCIe traffic in no more than
// MaxTrafficFraction of them (a job loading data is working, not idle).
type IdleConfig struct {
	Enabled bool          `yaml:"enabled"`
	Window  time.Duration `yaml:"window"`
	// ActiveThreshold: a sample whose gr_engine_active (sm_active, then gpu_util,
	// when the source has no profiling fields) reaches it counts as active. Ratio.
	ActiveThreshold   float64 `yaml:"active_threshold"`
	MaxActiveFraction float64 `yaml:"max_active_fraction"`
	// DRAMThreshold (ratio) and PCIeBytesPerS (rx + tx) mark a sample with traffic.
	DRAMThreshold      float64 `yaml:"dram_threshold"`
	PCIeBytesPerS      float64 `yaml:"pcie_bytes_per_s"`
	MaxTrafficFraction float64 `yaml:"max_traffic_fraction"`
}

// SharedConfig: how idleness is judged per process on a GPU several running jobs
// share (time-slicing, MPS): a tenant is idle when its own processes' SM (or
// memory-bandwidth) share reached ActiveThreshold in at most MaxActiveFraction of
// their samples of the idle window. Processes without a per-process figure are
// not judged this way (their GPU's activity is their neighbours' too).
type SharedConfig struct {
	Enabled           bool    `yaml:"enabled"`
	ActiveThreshold   float64 `yaml:"active_threshold"`
	MaxActiveFraction float64 `yaml:"max_active_fraction"`
}

// HungConfig: a running job all of whose GPUs were flat (SM activity at most
// MaxSM, tensor at most MaxTensor, DRAM at most MaxDRAM, PCIe at most PCIeBytesPerS)
// in at least MinFlatFraction of the samples of Window, after a Baseline before it
// in which the job's median SM activity was at least MinBaselineSM on every GPU,
// the GPUs' last busy samples within MaxSkew of each other (a simultaneous drop).
// Either the engines keep spinning (graphics engine or GPU utilisation at least
// SpinThreshold in the flat samples: a kernel waiting on a collective that never
// completes) or, on jobs of at least HostHangMinGPUs GPUs, everything is near zero
// (engine at most HostHangMaxActive) with memory held: the host side hung. Once
// open, a finding stays while the GPUs stay flat (the baseline has scrolled out).
type HungConfig struct {
	Enabled           bool          `yaml:"enabled"`
	Window            time.Duration `yaml:"window"`
	Baseline          time.Duration `yaml:"baseline"`
	MinBaselineSM     float64       `yaml:"min_baseline_sm"`
	MaxSM             float64       `yaml:"max_sm"`
	MaxTensor         float64       `yaml:"max_tensor"`
	MaxDRAM           float64       `yaml:"max_dram"`
	PCIeBytesPerS     float64       `yaml:"pcie_bytes_per_s"`
	MinFlatFraction   float64       `yaml:"min_flat_fraction"`
	MaxSkew           time.Duration `yaml:"max_skew"`
	SpinThreshold     float64       `yaml:"spin_threshold"`
	HostHangMaxActive float64       `yaml:"host_hang_max_active"`
	HostHangMinGPUs   int           `yaml:"host_hang_min_gpus"`
}

// MemoryCapacityConfig: a running job whose GPUs' memory over Window stays at least
// MinMemFraction full (p10 of used over total) while its SM activity stays low (p95
// at most MaxSMP95), DRAM is not the bottleneck (p50 at most MaxDRAMP50) and it keeps
// working (active in at least MinActiveFraction of the samples: not idle). It
// recommends the smallest MIG profile (card_options on the job's card) or
// time-slicing share whose compute covers its SM p95 × ComputeHeadroom, with the
// memory capped to what that share holds (batching requests, or a serving
// engine's memory cap such as vLLM's gpu_memory_utilization), priced.
type MemoryCapacityConfig struct {
	Enabled        bool          `yaml:"enabled"`
	Window         time.Duration `yaml:"window"`
	MinMemFraction float64       `yaml:"min_mem_fraction"`
	// MinMemMiB is the least memory per GPU the job must hold: a job that fills
	// a small MIG instance it was sized for is not over-provisioned.
	MinMemMiB         float64 `yaml:"min_mem_mib"`
	MaxSMP95          float64 `yaml:"max_sm_p95"`
	MaxDRAMP50        float64 `yaml:"max_dram_p50"`
	ActiveThreshold   float64 `yaml:"active_threshold"`
	MinActiveFraction float64 `yaml:"min_active_fraction"`
	ComputeHeadroom   float64 `yaml:"compute_headroom"`
}

// ZombieConfig: a process holding at least MinMemMiB with activity never above
// ActiveThreshold, either for OrphanWindow after its job ended (or with no job any
// scheduler knows), or for InactiveWindow while its job runs.
type ZombieConfig struct {
	Enabled         bool          `yaml:"enabled"`
	OrphanWindow    time.Duration `yaml:"orphan_window"`
	InactiveWindow  time.Duration `yaml:"inactive_window"`
	ActiveThreshold float64       `yaml:"active_threshold"`
	MinMemMiB       uint32        `yaml:"min_mem_mib"`
}

// MemoryBoundConfig: a running job whose median DRAM activity over Window is at
// least MinDRAMP50 while median SM activity is at most MaxSMP50 and median tensor
// activity at most MaxTensorP50, with both conditions holding together in at least
// MinSustained of the samples.
type MemoryBoundConfig struct {
	Enabled      bool          `yaml:"enabled"`
	Window       time.Duration `yaml:"window"`
	MinDRAMP50   float64       `yaml:"min_dram_p50"`
	MaxSMP50     float64       `yaml:"max_sm_p50"`
	MaxTensorP50 float64       `yaml:"max_tensor_p50"`
	MinSustained float64       `yaml:"min_sustained"`
	// FedSM is the SM activity a well-fed job reaches: the finding's waste is the
	// GPU-hours the job would have saved running there, hours × GPUs × (1 − SM
	// p50 / FedSM), priced (an estimate; the finding stays a hint).
	FedSM float64 `yaml:"fed_sm"`
}

// ComputeBoundConfig: a running job whose median SM activity over Window is at
// least MinSMP50 and median tensor activity at least MinTensorP50 while median
// DRAM activity is at most MaxDRAMP50: compute, not memory bandwidth, limits it.
type ComputeBoundConfig struct {
	Enabled      bool          `yaml:"enabled"`
	Window       time.Duration `yaml:"window"`
	MinSMP50     float64       `yaml:"min_sm_p50"`
	MinTensorP50 float64       `yaml:"min_tensor_p50"`
	MaxDRAMP50   float64       `yaml:"max_dram_p50"`
}

// WrongCardConfig: a job on whole HighEndCards whose peak memory over Window stays
// under MaxPeakMemFraction of the card's and whose SM activity stays low (p50 at
// most MaxSMP50, p95 at most MaxSMP95) both over all its samples and over its
// active samples alone, so a small job is right-sized however often it is busy;
// it must be active in at least MinActiveFraction of the samples (a job never
// active is idle, not small).
type WrongCardConfig struct {
	Enabled bool          `yaml:"enabled"`
	Window  time.Duration `yaml:"window"`
	// HighEndCards are card types ("A100-80GB") or families ("H100", matching
	// every H100-…) worth moving small jobs off.
	HighEndCards       []string `yaml:"high_end_cards"`
	MaxPeakMemFraction float64  `yaml:"max_peak_mem_fraction"`
	MaxSMP50           float64  `yaml:"max_sm_p50"`
	MaxSMP95           float64  `yaml:"max_sm_p95"`
	ActiveThreshold    float64  `yaml:"active_threshold"`
	MinActiveFraction  float64  `yaml:"min_active_fraction"`
	// MemHeadroom multiplies the peak memory a recommended card must hold.
	MemHeadroom float64 `yaml:"mem_headroom"`
}

// LowUtilConfig: a job running at least MinRuntime whose median SM activity over
// Window is at most MaxSMP50 although it is busy (active in at least
// MinActiveFraction of the samples).
type LowUtilConfig struct {
	Enabled           bool          `yaml:"enabled"`
	MinRuntime        time.Duration `yaml:"min_runtime"`
	Window            time.Duration `yaml:"window"`
	MaxSMP50          float64       `yaml:"max_sm_p50"`
	ActiveThreshold   float64       `yaml:"active_threshold"`
	MinActiveFraction float64       `yaml:"min_active_fraction"`
	// FedSM: as MemoryBoundConfig.FedSM.
	FedSM float64 `yaml:"fed_sm"`
}

// CardOption is a card or MIG profile wrong_card may recommend. A MIG profile is
// offered only for jobs on its own card type and priced at Slices/7 of that card.
type CardOption struct {
	// Card is the card type as the price book names it, e.g. "L40S-48GB".
	Card string `yaml:"card"`
	// MIGProfile is e.g. "1g.10gb"; empty for a whole card.
	MIGProfile string `yaml:"mig_profile"`
	// MemoryMiB is the memory the driver reports for the card or instance.
	MemoryMiB uint32 `yaml:"memory_mib"`
	// Slices is the instance's compute slices out of 7; 0 for a whole card.
	Slices int `yaml:"slices"`
}

// DefaultConfig returns the thresholds DESIGN.md describes. Why each default:
//   - idle: 30 min window; active means gr_engine_active ≥ 5 % (DESIGN's 1–5 %
//     band: a GPU doing real work is far above it, an idle context sits at 0); idle
//     when active in under 5 % of samples, so a one-tick spike every 20 min (1 %)
//     does not reset it; traffic (DRAM ≥ 5 % or PCIe ≥ 5 MB/s, a thousand times a
//     monitoring trickle and a thousandth of a data loader) in over 10 % of samples
//     means the job is working.
//   - zombie: 10 min after its job ended is long enough for any teardown; 2 h of
//     nothing at all while its job runs is not a pause; 100 MiB is less than a bare
//     CUDA context, so any process holding a context counts.
//   - memory_bound: DRAM p50 ≥ 60 % with SM p50 ≤ 35 % and tensor p50 ≤ 20 % over an
//     hour, together in 75 % of samples: a hint, so it waits for a sustained pattern.
//   - shared: a tenant of a shared GPU is idle as a job is (its own SM share ≥ 5 %
//     in at most 5 % of samples).
//   - hung: 15 min flat (SM ≤ 15 %, tensor ≤ 2 %, DRAM ≤ 3 %, PCIe ≤ 5 MB/s in 97 %
//     of samples) after an hour at SM p50 ≥ 30 %, on every GPU within 2 min: a
//     checkpoint (PCIe busy, under a minute) or a data-loading phase (PCIe busy, no
//     busy hour before it) is neither; 15 min is shorter than the idle window, so
//     a hang is named before it would be called idle.
//   - memory_capacity: over an hour, memory ≥ 80 % full (p10), SM p95 ≤ 20 %, DRAM
//     p50 ≤ 30 % (else it is memory_bound), engine ≥ 1 % in 90 % of samples (it is
//     serving, not idle), holding ≥ 20 GiB per GPU (a KV-cache reservation worth
//     reclaiming, not a job filling the small MIG instance it was sized for); the
//     share it needs covers SM p95 × 1.5.
//   - wrong_card: over 2 h, peak memory ≤ 25 % of an 80 GB+ card (fits a 20 GB slice
//     or a 24–48 GB card with room), SM p50 ≤ 20 % and p95 ≤ 50 % over all and over
//     active samples, active in at least 20 % of them (however bursty); a dev
//     notebook computing at 20 %+ when it runs is not small.
//   - low_util: jobs running 2 h whose SM p50 over 2 h is ≤ 20 % while busy 80 % of
//     the time.
//   - fed_sm (memory_bound, low_util): 50 %, a training step that keeps its input
//     pipeline full sits well above it; the hint's waste is what was left below it.
//
// inference-online's built-in policy is in builtinPool.
func DefaultConfig() Config {
	c := Config{
		Interval:              5 * time.Minute,
		HintInterval:          30 * time.Minute,
		ResolveAfter:          15 * time.Minute,
		CriticalWasteGPUHours: 8,
		MinCoverage:           0.8,
		MinSamples:            5,
		CardOptions:           defaultCardOptions(),
		Defaults: Thresholds{
			Idle: IdleConfig{
				Enabled: true, Window: 30 * time.Minute, ActiveThreshold: 0.05, MaxActiveFraction: 0.05,
				DRAMThreshold: 0.05, PCIeBytesPerS: 5e6, MaxTrafficFraction: 0.1,
			},
			Shared: SharedConfig{Enabled: true, ActiveThreshold: 0.05, MaxActiveFraction: 0.05},
			Zombie: ZombieConfig{
				Enabled: true, OrphanWindow: 10 * time.Minute, InactiveWindow: 2 * time.Hour,
				ActiveThreshold: 0.01, MinMemMiB: 100,
			},
			Hung: HungConfig{
				Enabled: true, Window: 15 * time.Minute, Baseline: time.Hour, MinBaselineSM: 0.3,
				MaxSM: 0.15, MaxTensor: 0.02, MaxDRAM: 0.03, PCIeBytesPerS: 5e6, MinFlatFraction: 0.97,
				MaxSkew: 2 * time.Minute, SpinThreshold: 0.9, HostHangMaxActive: 0.02, HostHangMinGPUs: 2,
			},
			MemoryCapacity: MemoryCapacityConfig{
				Enabled: true, Window: time.Hour, MinMemFraction: 0.8, MinMemMiB: 20480, MaxSMP95: 0.2, MaxDRAMP50: 0.3,
				ActiveThreshold: 0.01, MinActiveFraction: 0.9, ComputeHeadroom: 1.5,
			},
			MemoryBound: MemoryBoundConfig{
				Enabled: true, Window: time.Hour, MinDRAMP50: 0.6, MaxSMP50: 0.35, MaxTensorP50: 0.2, MinSustained: 0.75, FedSM: 0.5,
			},
			ComputeBound: ComputeBoundConfig{
				Enabled: true, Window: time.Hour, MinSMP50: 0.75, MinTensorP50: 0.45, MaxDRAMP50: 0.55,
			},
			WrongCard: WrongCardConfig{
				Enabled: true, Window: 2 * time.Hour,
				HighEndCards:       []string{"H100", "H200", "H800", "H20", "B100", "B200", "B300", "GH200", "GB200", "A100-80GB", "A800-80GB"},
				MaxPeakMemFraction: 0.25, MaxSMP50: 0.2, MaxSMP95: 0.5, ActiveThreshold: 0.05, MinActiveFraction: 0.2,
				MemHeadroom: 1.2,
			},
			LowUtil: LowUtilConfig{
				Enabled: true, MinRuntime: 2 * time.Hour, Window: 2 * time.Hour, MaxSMP50: 0.2,
				ActiveThreshold: 0.05, MinActiveFraction: 0.8, FedSM: 0.5,
			},
		},
	}
	c.Pools = builtinPools(c.Defaults)
	return c
}

// builtinPool returns pool's thresholds before any configuration of that pool: the
// defaults, except for inference-online. An online service holds its GPUs to answer
// bursts: its quiet nights (a few % engine activity and a trickle of requests) are
// its job, not waste, and serving kernels run at low SM activity by design. So in
// that pool idle means no requests at all for 2 h (engine ≥ 1 % in under 1 % of
// samples, no traffic; a tenant's own SM or memory share likewise), and low_util is off: sizing a service is a capacity
// question for its owners, not a finding.
func builtinPool(pool string, d Thresholds) Thresholds {
	t := d
	t.WrongCard.HighEndCards = slices.Clone(d.WrongCard.HighEndCards)
	if pool == PoolInferenceOnline {
		t.Idle.Window = 2 * time.Hour
		t.Idle.ActiveThreshold = 0.01
		t.Idle.MaxActiveFraction = 0.01
		t.Shared.ActiveThreshold = 0.01
		t.Shared.MaxActiveFraction = 0.01
		t.LowUtil.Enabled = false
	}
	return t
}

// builtinPools returns the pools whose built-in policy differs from d.
func builtinPools(d Thresholds) map[string]Thresholds {
	return map[string]Thresholds{PoolInferenceOnline: builtinPool(PoolInferenceOnline, d)}
}

// ForPool returns the thresholds that apply to a pool.
func (c Config) ForPool(pool string) Thresholds {
	if t, ok := c.Pools[pool]; ok {
		return t
	}
	return c.Defaults
}

// defaultCardOptions lists common smaller cards and the MIG profiles of the high-end
// cards, with the memory the driver reports (approximate for the MIG profiles).
// Options the price book does not price are skipped when recommending.
func defaultCardOptions() []CardOption {
	return []CardOption{
		{Card: "L4-24GB", MemoryMiB: 23034},
		{Card: "A10-24GB", MemoryMiB: 23028},
		{Card: "A100-40GB", MemoryMiB: 40960},
		{Card: "L40S-48GB", MemoryMiB: 46068},
		{Card: "A100-80GB", MIGProfile: "1g.10gb", MemoryMiB: 9856, Slices: 1},
		{Card: "A100-80GB", MIGProfile: "2g.20gb", MemoryMiB: 19968, Slices: 2},
		{Card: "A100-80GB", MIGProfile: "3g.40gb", MemoryMiB: 40192, Slices: 3},
		{Card: "H100-80GB", MIGProfile: "1g.10gb", MemoryMiB: 9856, Slices: 1},
		{Card: "H100-80GB", MIGProfile: "2g.20gb", MemoryMiB: 19968, Slices: 2},
		{Card: "H100-80GB", MIGProfile: "3g.40gb", MemoryMiB: 40192, Slices: 3},
		{Card: "H200-141GB", MIGProfile: "1g.18gb", MemoryMiB: 16384, Slices: 1},
		{Card: "H200-141GB", MIGProfile: "2g.35gb", MemoryMiB: 33792, Slices: 2},
		{Card: "H200-141GB", MIGProfile: "3g.71gb", MemoryMiB: 71680, Slices: 3},
	}
}

// Validate reports every setting out of range; each line names the field by its
// YAML path, e.g. "pools.dev.idle.window: must be positive".
func (c Config) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Interval <= 0 {
		add("interval", "must be positive, got %v", c.Interval)
	}
	if c.HintInterval < c.Interval {
		add("hint_interval", "%v is shorter than interval %v", c.HintInterval, c.Interval)
	}
	if c.ResolveAfter < c.Interval {
		add("resolve_after", "%v is shorter than interval %v: every finding would resolve between passes", c.ResolveAfter, c.Interval)
	}
	if !(c.CriticalWasteGPUHours > 0) {
		add("critical_waste_gpu_hours", "must be positive, got %g", c.CriticalWasteGPUHours)
	}
	if !(c.MinCoverage > 0 && c.MinCoverage <= 1) {
		add("min_coverage", "must be in (0, 1], got %g", c.MinCoverage)
	}
	if c.MinSamples < 1 {
		add("min_samples", "must be at least 1, got %d", c.MinSamples)
	}
	for i, o := range c.CardOptions {
		f := fmt.Sprintf("card_options[%d]", i)
		if o.Card == "" {
			add(f+".card", "must name a card type")
		}
		if o.MemoryMiB == 0 {
			add(f+".memory_mib", "must be positive")
		}
		if (o.MIGProfile == "") != (o.Slices == 0) || o.Slices < 0 || o.Slices > 7 {
			add(f+".slices", "must be 1..7 for a MIG profile and 0 for a whole card, got %d", o.Slices)
		}
	}
	errs = append(errs, c.Defaults.validate("defaults")...)
	for _, name := range slices.Sorted(maps.Keys(c.Pools)) {
		if name == "" {
			add("pools", "a pool has an empty name")
		}
		errs = append(errs, c.Pools[name].validate("pools."+name)...)
	}
	return errors.Join(errs...)
}

func (t Thresholds) validate(path string) []error {
	var errs []error
	window := func(field string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s.%s: must be positive, got %v", path, field, d))
		}
	}
	ratio := func(field string, v float64) {
		if !(v >= 0 && v <= 1) {
			errs = append(errs, fmt.Errorf("%s.%s: must be a ratio in [0, 1], got %g", path, field, v))
		}
	}
	i := t.Idle
	window("idle.window", i.Window)
	ratio("idle.active_threshold", i.ActiveThreshold)
	ratio("idle.max_active_fraction", i.MaxActiveFraction)
	ratio("idle.dram_threshold", i.DRAMThreshold)
	ratio("idle.max_traffic_fraction", i.MaxTrafficFraction)
	if !(i.PCIeBytesPerS >= 0) {
		errs = append(errs, fmt.Errorf("%s.idle.pcie_bytes_per_s: must not be negative, got %g", path, i.PCIeBytesPerS))
	}
	sh := t.Shared
	ratio("shared.active_threshold", sh.ActiveThreshold)
	ratio("shared.max_active_fraction", sh.MaxActiveFraction)
	h := t.Hung
	window("hung.window", h.Window)
	window("hung.baseline", h.Baseline)
	window("hung.max_skew", h.MaxSkew)
	for _, r := range []struct {
		f string
		v float64
	}{{"min_baseline_sm", h.MinBaselineSM}, {"max_sm", h.MaxSM}, {"max_tensor", h.MaxTensor}, {"max_dram", h.MaxDRAM},
		{"min_flat_fraction", h.MinFlatFraction}, {"spin_threshold", h.SpinThreshold}, {"host_hang_max_active", h.HostHangMaxActive}} {
		ratio("hung."+r.f, r.v)
	}
	if !(h.PCIeBytesPerS >= 0) {
		errs = append(errs, fmt.Errorf("%s.hung.pcie_bytes_per_s: must not be negative, got %g", path, h.PCIeBytesPerS))
	}
	if h.HostHangMinGPUs < 1 {
		errs = append(errs, fmt.Errorf("%s.hung.host_hang_min_gpus: must be at least 1, got %d", path, h.HostHangMinGPUs))
	}
	mc := t.MemoryCapacity
	window("memory_capacity.window", mc.Window)
	ratio("memory_capacity.min_mem_fraction", mc.MinMemFraction)
	ratio("memory_capacity.max_sm_p95", mc.MaxSMP95)
	if !(mc.MinMemMiB >= 0) {
		errs = append(errs, fmt.Errorf("%s.memory_capacity.min_mem_mib: must not be negative, got %g", path, mc.MinMemMiB))
	}
	ratio("memory_capacity.max_dram_p50", mc.MaxDRAMP50)
	ratio("memory_capacity.active_threshold", mc.ActiveThreshold)
	ratio("memory_capacity.min_active_fraction", mc.MinActiveFraction)
	if !(mc.ComputeHeadroom >= 1) {
		errs = append(errs, fmt.Errorf("%s.memory_capacity.compute_headroom: must be at least 1, got %g", path, mc.ComputeHeadroom))
	}
	z := t.Zombie
	window("zombie.orphan_window", z.OrphanWindow)
	window("zombie.inactive_window", z.InactiveWindow)
	ratio("zombie.active_threshold", z.ActiveThreshold)
	m := t.MemoryBound
	window("memory_bound.window", m.Window)
	ratio("memory_bound.min_dram_p50", m.MinDRAMP50)
	ratio("memory_bound.max_sm_p50", m.MaxSMP50)
	ratio("memory_bound.max_tensor_p50", m.MaxTensorP50)
	ratio("memory_bound.min_sustained", m.MinSustained)
	if !(m.FedSM > 0 && m.FedSM <= 1) {
		errs = append(errs, fmt.Errorf("%s.memory_bound.fed_sm: must be in (0, 1], got %g", path, m.FedSM))
	}
	cb := t.ComputeBound
	window("compute_bound.window", cb.Window)
	ratio("compute_bound.min_sm_p50", cb.MinSMP50)
	ratio("compute_bound.min_tensor_p50", cb.MinTensorP50)
	ratio("compute_bound.max_dram_p50", cb.MaxDRAMP50)
	w := t.WrongCard
	window("wrong_card.window", w.Window)
	ratio("wrong_card.max_peak_mem_fraction", w.MaxPeakMemFraction)
	ratio("wrong_card.max_sm_p50", w.MaxSMP50)
	ratio("wrong_card.max_sm_p95", w.MaxSMP95)
	ratio("wrong_card.active_threshold", w.ActiveThreshold)
	ratio("wrong_card.min_active_fraction", w.MinActiveFraction)
	if !(w.MemHeadroom >= 1) {
		errs = append(errs, fmt.Errorf("%s.wrong_card.mem_headroom: must be at least 1, got %g", path, w.MemHeadroom))
	}
	if w.Enabled && len(w.HighEndCards) == 0 {
		errs = append(errs, fmt.Errorf("%s.wrong_card.high_end_cards: must list at least one card when enabled", path))
	}
	l := t.LowUtil
	window("low_util.window", l.Window)
	if l.MinRuntime < 0 {
		errs = append(errs, fmt.Errorf("%s.low_util.min_runtime: must not be negative, got %v", path, l.MinRuntime))
	}
	ratio("low_util.max_sm_p50", l.MaxSMP50)
	ratio("low_util.active_threshold", l.ActiveThreshold)
	ratio("low_util.min_active_fraction", l.MinActiveFraction)
	if !(l.FedSM > 0 && l.FedSM <= 1) {
		errs = append(errs, fmt.Errorf("%s.low_util.fed_sm: must be in (0, 1], got %g", path, l.FedSM))
	}
	return errs
}
