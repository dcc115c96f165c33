package trace

import (
	"fmt"
	"strings"

	"github.com/gpupool/gpupool/schemas"
)

// RecordKind is a trace line's `type`.
type RecordKind uint8

// The record kinds of trace format v1.
const (
	KindGPU     RecordKind = iota + 1 // "gpu": Record.GPU is set
	KindProcess                       // "process": Record.Process is set
	KindJob                           // "job": Record.Job is set
)

// String returns the kind as the `type` field spells it.
func (k RecordKind) String() string {
	switch k {
	case KindGPU:
		return "gpu"
	case KindProcess:
		return "process"
	case KindJob:
		return "job"
	}
	return fmt.Sprintf("RecordKind(%d)", uint8(k))
}

// Record is one trace line: exactly one of GPU, Process and Job is set, as Kind says.
type Record struct {
	Kind    RecordKind
	GPU     *schemas.GPUSample
	Process *schemas.ProcessSample
	Job     *schemas.JobEvent
}

// TimeMs returns the record's time in milliseconds since the Unix epoch.
func (r Record) TimeMs() int64 {
	switch {
	case r.GPU != nil:
		return r.GPU.TimeMs
	case r.Process != nil:
		return r.Process.TimeMs
	case r.Job != nil:
		return r.Job.TimeMs
	}
	return 0
}

// DefaultCluster is the cluster of a sample row that names none.
const DefaultCluster = "default"

// maxTimeMs is the end of year 9999, the last time RFC 3339 can write.
const maxTimeMs = 253402300799999

// Bounds of integer fields, checked before a value is narrowed to its column:
// schemas' (docs/data-model.md lists them with their reasons), so that the trace
// reader and ingest refuse the same values.
const (
	// MaxGPUIndex is schemas.MaxGPUIndex (schemas.BoundGPUIndex): the store keeps
	// gpu_index in 16 bits.
	MaxGPUIndex = schemas.MaxGPUIndex
	// MaxEnergyMilliJ is schemas.MaxEnergyMilliJ (schemas.BoundEnergyMilliJ): 2^53
	// mJ is 5 kW drawn for 57 years; 2^64-1 is a sentinel or a wrapped subtraction.
	MaxEnergyMilliJ = schemas.MaxEnergyMilliJ
	// MaxJobGPUs is schemas.MaxJobGPUs: the GPUs a job event may ask for.
	MaxJobGPUs = schemas.MaxJobGPUs
)

// ratioSlack tolerates rounding in sources that report percentages; it is the slack
// schemas.Validate allows, so that whatever a collector may publish can be recorded.
const ratioSlack = 1e-3

var (
	validEvents = map[string]bool{
		schemas.EventSubmit: true, schemas.EventAdmit: true, schemas.EventStart: true,
		schemas.EventEnd: true, schemas.EventPreempt: true, schemas.EventRequeue: true,
	}
	validStatuses = map[string]bool{
		"": true, schemas.StatusSucceeded: true, schemas.StatusFailed: true,
		schemas.StatusCancelled: true, schemas.StatusPreempted: true,
	}
	validWorkloads = map[string]bool{
		"": true, schemas.WorkloadTraining: true, schemas.WorkloadInference: true,
		schemas.WorkloadBatchInference: true, schemas.WorkloadDev: true, schemas.WorkloadOther: true,
	}
)

const (
	eventValues    = "submit, admit, start, end, preempt, requeue"
	statusValues   = "succeeded, failed, cancelled, preempted"
	workloadValues = "training, inference, batch-inference, dev, other"
)

// Card returns the card type of a gpu row, which the format does not carry:
// schemas.CardType of the model and memory size. A MIG instance reports its slice's
// memory, not its card's, so its card's size is read from the model name
// ("NVIDIA A100-SXM4-40GB" → 40 GB); when the name has none, the card type is the
// family alone.
func Card(model, migProfile, gpuUUID string, fbTotalMiB uint32) string {
	if migProfile == "" && !strings.HasPrefix(gpuUUID, "MIG-") {
		return schemas.CardType(model, fbTotalMiB)
	}
	return schemas.CardType(model, uint32(modelMemoryGB(model))*1024)
}

// modelMemoryGB finds a "<n>GB" token in a driver's model name; 0 if there is none.
func modelMemoryGB(model string) int {
	for i := 0; i+1 < len(model); i++ {
		if (model[i] != 'G' && model[i] != 'g') || (model[i+1] != 'B' && model[i+1] != 'b') {
			continue
		}
		j := i
		for j > 0 && model[j-1] >= '0' && model[j-1] <= '9' {
			j--
		}
		if j == i || i-j > 4 || (j > 0 && isAlnum(model[j-1])) || (i+2 < len(model) && isAlnum(model[i+2])) {
			continue
		}
		n := 0
		for _, c := range model[j:i] {
			n = n*10 + int(c-'0')
		}
		return n
	}
	return 0
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// The checks below are shared by the Reader (a failing line is a LineError) and the
// Writer (it refuses to write what it could not read back). Each returns the reason.

func checkTime(ms int64) string {
	if ms <= 0 || ms > maxTimeMs {
		return fmt.Sprintf("ts: %d ms is not between 1970 and 9999", ms)
	}
	return ""
}

func checkRatio(name string, v float32) string {
	if schemas.IsMissing(v) {
		return ""
	}
	if !(v >= -ratioSlack && v <= 1+ratioSlack) {
		return fmt.Sprintf("%s: %v is outside 0..1", name, v)
	}
	return ""
}

func checkGPU(s *schemas.GPUSample) string {
	switch {
	case s.Node == "":
		return `missing required field "node"`
	case s.GPUUUID == "":
		return `missing required field "gpu_uuid"`
	}
	if r := checkTime(s.TimeMs); r != "" {
		return r
	}
	if r := identReason(checkSampleIdents(s.Cluster, s.Node, s.GPUUUID, "", [][2]string{{"model", s.Model}, {"card", s.Card}, {"mig_profile", s.MIGProfile}})); r != "" {
		return r
	}
	for _, f := range [...]struct {
		name string
		v    float32
	}{
		{"gr_engine_active", s.GrEngineActive}, {"sm_active", s.SMActive}, {"sm_occupancy", s.SMOccupancy},
		{"tensor_active", s.TensorActive}, {"dram_active", s.DRAMActive}, {"gpu_util", s.GPUUtil},
	} {
		if r := checkRatio(f.name, f.v); r != "" {
			return r
		}
	}
	for _, f := range [...]struct {
		b schemas.Bound
		v float64
	}{
		{schemas.BoundPCIeTx, float64(s.PCIeTxBytesPerS)}, {schemas.BoundPCIeRx, float64(s.PCIeRxBytesPerS)},
		{schemas.BoundPowerW, float64(s.PowerW)}, {schemas.BoundTempC, float64(s.TempC)}, {schemas.BoundFBTotalMiB, float64(s.FBTotalMiB)},
	} {
		if r := f.b.Reason(f.v); r != "" {
			return r
		}
	}
	if s.FBTotalMiB > 0 && s.FBUsedMiB > s.FBTotalMiB {
		return fmt.Sprintf("fb_used_mib: %d exceeds fb_total_mib %d", s.FBUsedMiB, s.FBTotalMiB)
	}
	if r := schemas.BoundGPUIndex.Reason(float64(s.GPUIndex)); r != "" {
		return r
	}
	if s.EnergyMilliJ > MaxEnergyMilliJ { // Reason's float would round the counter
		return fmt.Sprintf("energy_mj: %d is out of range (at most %d)", s.EnergyMilliJ, uint64(MaxEnergyMilliJ))
	}
	return ""
}

func checkProcess(s *schemas.ProcessSample) string {
	switch {
	case s.Node == "":
		return `missing required field "node"`
	case s.GPUUUID == "":
		return `missing required field "gpu_uuid"`
	}
	if r := checkTime(s.TimeMs); r != "" {
		return r
	}
	if r := identReason(checkSampleIdents(s.Cluster, s.Node, s.GPUUUID, s.Job, [][2]string{{"process_name", s.ProcessName}})); r != "" {
		return r
	}
	if r := schemas.ProcessMemoryReason(s.FBUsedMiB, 0); r != "" {
		return r
	}
	if r := checkRatio("sm_util", s.SMUtil); r != "" {
		return r
	}
	return checkRatio("mem_util", s.MemUtil)
}

func checkJob(e *schemas.JobEvent) string {
	switch {
	case e.Job == "":
		return `missing required field "job"`
	case e.Event == "":
		return `missing required field "event"`
	case !validEvents[e.Event]:
		return fmt.Sprintf("event: unknown value %q (want one of %s)", e.Event, eventValues)
	case !validStatuses[e.Status]:
		return fmt.Sprintf("status: unknown value %q (want one of %s)", e.Status, statusValues)
	case !validWorkloads[e.Workload]:
		return fmt.Sprintf("workload: unknown value %q (want one of %s)", e.Workload, workloadValues)
	}
	if r := identReason(schemas.CheckJobEventIdents(e)); r != "" {
		return r
	}
	if err := schemas.CheckJobEventRules(e); err != nil {
		return ruleReason(err)
	}
	return checkTime(e.TimeMs)
}

// checkSampleIdents checks a sample's identifiers by the rules of schemas'
// ident.go: the cluster is a name, node, GPU and job are keys, the rest text.
func checkSampleIdents(cluster, node, gpu, job string, text [][2]string) error {
	for _, c := range [...]struct {
		check    func(string, string) error
		field, v string
	}{
		{schemas.CheckName, "cluster", cluster}, {schemas.CheckKey, "node", node},
		{schemas.CheckKey, "gpu_uuid", gpu}, {schemas.CheckKey, "job", job},
	} {
		if err := c.check(c.field, c.v); err != nil {
			return err
		}
	}
	for _, t := range text {
		if err := schemas.CheckText(t[0], t[1]); err != nil {
			return err
		}
	}
	return nil
}

// identReason is err as a line's reason, without the sentinel's words.
// ruleReason is identReason for schemas.CheckJobEventRules' errors.
func ruleReason(err error) string {
	return strings.TrimPrefix(err.Error(), schemas.ErrInvalidValue.Error()+": ")
}

func identReason(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimPrefix(err.Error(), schemas.ErrInvalidIdentifier.Error()+": ")
}
