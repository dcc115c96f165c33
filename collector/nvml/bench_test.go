package nvml

import (
	"strconv"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// freshUtilDevice answers every process utilisation query with new samples, as a
// busy GPU does, so that each benchmark tick maps them.
type freshUtilDevice struct{ *fakeDevice }

func (d freshUtilDevice) ProcessUtilization(dst []processUtilSample, since uint64) ([]processUtilSample, status) {
	dst = dst[:0]
	for i, u := range d.ProcessUtil {
		u.TimeStamp = since + 1 + uint64(i)
		dst = append(dst, u)
	}
	return dst, success
}

type benchLibrary struct{ devs []device }

func (l benchLibrary) DeviceCount() (int, status)           { return len(l.devs), success }
func (l benchLibrary) DeviceByIndex(i int) (device, status) { return l.devs[i], success }
func (l benchLibrary) Shutdown() status                     { return success }
func (l benchLibrary) DriverVersion() (string, status)      { return "570.86.15", success }
func (l benchLibrary) EventSetCreate() (eventSet, status) {
	return &fakeEventSet{registered: map[device]uint64{}, lib: &fakeLibrary{}}, success
}

// benchNode is 8 H100s with 64 processes each, every process with /proc/<pid>/comm.
func benchNode(b *testing.B) (*Source, time.Time) {
	f, _ := loadFixture(b, "h100")
	tmpl := f.Devices[0]
	comm := map[string]string{}
	var lib benchLibrary
	for g := range 8 {
		d := &fakeDevice{
			UUIDValue: tmpl.UUIDValue[:len(tmpl.UUIDValue)-1] + strconv.Itoa(g),
			NameValue: tmpl.NameValue, Memory: tmpl.Memory, Utilization: tmpl.Utilization,
			PowerMW: tmpl.PowerMW, EnergyMilliJ: tmpl.EnergyMilliJ, TempC: tmpl.TempC,
			PCIeTxKBs: tmpl.PCIeTxKBs, PCIeRxKBs: tmpl.PCIeRxKBs, ClocksEventReasons: tmpl.ClocksEventReasons,
			SupportedEvents: tmpl.SupportedEvents,
		}
		for p := range 64 {
			pid := uint32(10000 + g*100 + p)
			d.Compute = append(d.Compute, processInfo{PID: pid, UsedGPUMemory: uint64(p+1) << 28})
			d.ProcessUtil = append(d.ProcessUtil, processUtilSample{PID: pid, SMUtil: uint32(p), MemUtil: uint32(p / 2)})
			comm[strconv.Itoa(int(pid))] = "python3"
		}
		lib.devs = append(lib.devs, freshUtilDevice{d})
	}
	cfg := DefaultConfig()
	cfg.ProcRoot = writeComm(b, comm)
	s, err := New(cfg, withLibrary(lib))
	if err != nil {
		b.Fatal(err)
	}
	return s, f.At
}

// BenchmarkSample is one tick of an 8-GPU node with 64 processes per GPU (512
// process rows) over the fake library: the source's own cost, NVML's excluded.
func BenchmarkSample(b *testing.B) {
	s, at := benchNode(b)
	var batch schemas.SampleBatch
	if err := s.Sample(b.Context(), at, &batch); err != nil { // warm the caches
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		batch.Reset()
		at = at.Add(time.Second)
		if err := s.Sample(b.Context(), at, &batch); err != nil {
			b.Fatal(err)
		}
	}
	if len(batch.GPUs) != 8 || len(batch.Processes) != 8*64 || schemas.IsMissing(batch.Processes[1].SMUtil) {
		b.Fatalf("%d GPUs, %d processes", len(batch.GPUs), len(batch.Processes))
	}
}
