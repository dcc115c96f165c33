package schemas

import "math"

// Missing is the value of a float field the source did not report (NaN). It travels
// on the wire as NaN and is stored as NULL, so averages and quantiles skip it.
var Missing = float32(math.NaN())

// IsMissing reports whether a float field was not reported.
func IsMissing(v float32) bool { return v != v }

// GPUSample is one GPU (or one MIG instance) at one tick: the trace format's `gpu`
// record.
type GPUSample struct {
	// TimeMs is the sample time in milliseconds since the Unix epoch (UTC).
	TimeMs  int64
	Cluster string
	Node    string
	// GPUUUID is "GPU-…" for a whole GPU or "MIG-…" for a MIG instance.
	GPUUUID  string
	GPUIndex uint32
	// Model is the card model as the driver names it ("NVIDIA H100 80GB HBM3").
	Model string
	// DriverVersion is the NVIDIA driver's version ("570.86.15"); empty when the
	// source does not say.
	DriverVersion string
	// Card is the card type used for pricing ("H100-80GB"); see CardType.
	Card string
	// MIGProfile is e.g. "1g.10gb"; empty for a whole GPU.
	MIGProfile string
	FBTotalMiB uint32
	FBUsedMiB  uint32
	// Activity ratios 0..1 (DCGM profiling fields); Missing when not reported.
	GrEngineActive float32
	SMActive       float32
	SMOccupancy    float32
	TensorActive   float32
	DRAMActive     float32
	// GPUUtil is DCGM_FI_DEV_GPU_UTIL / NVML utilization.gpu as a ratio.
	GPUUtil           float32
	PCIeTxBytesPerS   float32
	PCIeRxBytesPerS   float32
	PowerW            float32
	EnergyMilliJ      uint64
	TempC             float32
	XID               uint32
	ClockEventReasons uint64
	// ECCCorrectedVolatile and ECCUncorrectedVolatile are the GPU's ECC error
	// counters since the driver loaded (single-bit corrected; double-bit
	// uncorrectable), 0 where the card has no ECC or the source cannot read them;
	// a MIG instance carries its card's. The node's collector turns their
	// increase on a job's GPUs into the job's end-event labels
	// (LabelECCUncorrected); the wire format does not carry them.
	ECCCorrectedVolatile   uint64
	ECCUncorrectedVolatile uint64
}

// NewGPUSample returns a GPUSample with every optional float field Missing, so a
// source fills in only what it measures.
func NewGPUSample() GPUSample {
	return GPUSample{
		GrEngineActive: Missing, SMActive: Missing, SMOccupancy: Missing,
		TensorActive: Missing, DRAMActive: Missing, GPUUtil: Missing,
		PCIeTxBytesPerS: Missing, PCIeRxBytesPerS: Missing,
		PowerW: Missing, TempC: Missing,
	}
}

// ProcessSample is one process on one GPU at one tick: the trace format's `process`
// record.
type ProcessSample struct {
	TimeMs      int64
	Cluster     string
	Node        string
	GPUUUID     string
	PID         uint32
	ProcessName string
	// Job is the job key the process belongs to; empty when it could not be
	// attributed (it is still sampled and counted as unattributed).
	Job       string
	FBUsedMiB uint32
	// SMUtil and MemUtil are this process's share of SM time and memory bandwidth,
	// 0..1; Missing when the source does not report them.
	SMUtil  float32
	MemUtil float32
}
