//go:build cgo

package nvml

import (
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// openLibrary loads libnvidia-ml.so.1 and calls nvmlInit. go-nvml resolves NVML's
// symbols lazily, and calling one the installed driver lacks kills the process
// ("symbol lookup error"), so the optional functions are looked up here once and
// reported as ERROR_FUNCTION_NOT_FOUND when absent.
func openLibrary() (library, status) {
	l := gonvml.New()
	if r := l.Init(); r != gonvml.SUCCESS {
		return nil, status(r)
	}
	ext := l.Extensions()
	has := func(name string) bool { return ext.LookupSymbol(name) == nil }
	sym := &symbols{
		clocksEvent:    has("nvmlDeviceGetCurrentClocksEventReasons"),
		clocksThrottle: has("nvmlDeviceGetCurrentClocksThrottleReasons"),
		energy:         has("nvmlDeviceGetTotalEnergyConsumption"),
		memoryV2:       has("nvmlDeviceGetMemoryInfo_v2"),
		mig:            has("nvmlDeviceGetMigMode") && has("nvmlDeviceGetMigDeviceHandleByIndex"),
		attributes:     has("nvmlDeviceGetAttributes_v2") || has("nvmlDeviceGetAttributes"),
		procUtil:       has("nvmlDeviceGetProcessUtilization"),
		events: has("nvmlEventSetCreate") && has("nvmlEventSetFree") &&
			has("nvmlDeviceGetSupportedEventTypes") && has("nvmlDeviceRegisterEvents") &&
			(has("nvmlEventSetWait_v2") || has("nvmlEventSetWait")),
	}
	return &goLibrary{l: l, sym: sym}, success
}

// symbols says which optional NVML functions the installed driver exports.
type symbols struct {
	clocksEvent, clocksThrottle, energy, memoryV2, mig, attributes, procUtil, events bool
}

// goLibrary is library over go-nvml.
type goLibrary struct {
	l   gonvml.Interface
	sym *symbols
}

var _ library = (*goLibrary)(nil)

func (g *goLibrary) DeviceCount() (int, status) {
	n, r := g.l.DeviceGetCount()
	return n, status(r)
}

func (g *goLibrary) DeviceByIndex(i int) (device, status) {
	d, r := g.l.DeviceGetHandleByIndex(i)
	if r != gonvml.SUCCESS {
		return nil, status(r)
	}
	return goDevice{d: d, sym: g.sym}, success
}

func (g *goLibrary) Shutdown() status { return status(g.l.Shutdown()) }

func (g *goLibrary) DriverVersion() (string, status) {
	v, r := g.l.SystemGetDriverVersion()
	return v, status(r)
}

func (g *goLibrary) EventSetCreate() (eventSet, status) {
	if !g.sym.events {
		return nil, errFunctionNotFound
	}
	set, r := g.l.EventSetCreate()
	if r != gonvml.SUCCESS {
		return nil, status(r)
	}
	return &goEventSet{set: set, sym: g.sym}, success
}

// goEventSet is eventSet over a go-nvml event set.
type goEventSet struct {
	set gonvml.EventSet
	sym *symbols
}

var _ eventSet = (*goEventSet)(nil)

func (e *goEventSet) Wait(timeoutMs uint32) (event, status) {
	d, r := e.set.Wait(timeoutMs)
	if r != gonvml.SUCCESS {
		return event{}, status(r)
	}
	ev := event{Type: d.EventType, Data: d.EventData, GPUInstanceID: d.GpuInstanceId, ComputeInstanceID: d.ComputeInstanceId}
	if d.Device != nil {
		ev.Device = goDevice{d: d.Device, sym: e.sym}
	}
	return ev, success
}

func (e *goEventSet) Free() status { return status(e.set.Free()) }

// goDevice is device over a go-nvml handle (a GPU or a MIG instance). It is a
// value, so that two goDevices of the same NVML handle are ==: that is how an
// event's device is matched with a GPU (xid.go), without an NVML call that a
// lost GPU would fail.
type goDevice struct {
	d   gonvml.Device
	sym *symbols
}

var _ device = goDevice{}

func (g goDevice) UUID() (string, status) {
	s, r := g.d.GetUUID()
	return s, status(r)
}

func (g goDevice) Name() (string, status) {
	s, r := g.d.GetName()
	return s, status(r)
}

func (g goDevice) MemoryInfo() (memoryInfo, status) {
	if g.sym.memoryV2 {
		// v2 separates the driver's reserved memory from what processes use.
		m, r := g.d.GetMemoryInfo_v2()
		if r == gonvml.SUCCESS {
			return memoryInfo{Total: m.Total, Reserved: m.Reserved, Free: m.Free, Used: m.Used}, success
		}
		if st := status(r); !st.unsupported() && r != gonvml.ERROR_ARGUMENT_VERSION_MISMATCH {
			return memoryInfo{}, st
		}
	}
	m, r := g.d.GetMemoryInfo()
	return memoryInfo{Total: m.Total, Free: m.Free, Used: m.Used}, status(r)
}

func (g goDevice) UtilizationRates() (utilization, status) {
	u, r := g.d.GetUtilizationRates()
	return utilization{GPU: u.Gpu, Memory: u.Memory}, status(r)
}

func (g goDevice) PowerUsage() (uint32, status) {
	p, r := g.d.GetPowerUsage()
	return p, status(r)
}

func (g goDevice) TotalEnergyConsumption() (uint64, status) {
	if !g.sym.energy {
		return 0, errFunctionNotFound
	}
	e, r := g.d.GetTotalEnergyConsumption()
	return e, status(r)
}

func (g goDevice) Temperature() (uint32, status) {
	t, r := g.d.GetTemperature(gonvml.TEMPERATURE_GPU)
	return t, status(r)
}

func (g goDevice) PcieThroughput(c pcieCounter) (uint32, status) {
	counter := gonvml.PCIE_UTIL_TX_BYTES
	if c == pcieRx {
		counter = gonvml.PCIE_UTIL_RX_BYTES
	}
	v, r := g.d.GetPcieThroughput(counter)
	return v, status(r)
}

func (g goDevice) CurrentClocksEventReasons() (uint64, status) {
	switch {
	case g.sym.clocksEvent:
		v, r := g.d.GetCurrentClocksEventReasons()
		return v, status(r)
	case g.sym.clocksThrottle:
		// Drivers before 535 only have the old name.
		v, r := g.d.GetCurrentClocksThrottleReasons()
		return v, status(r)
	}
	return 0, errFunctionNotFound
}

func (g goDevice) TotalEccErrors(uncorrected bool) (uint64, status) {
	t := gonvml.MEMORY_ERROR_TYPE_CORRECTED
	if uncorrected {
		t = gonvml.MEMORY_ERROR_TYPE_UNCORRECTED
	}
	v, r := g.d.GetTotalEccErrors(t, gonvml.VOLATILE_ECC)
	return v, status(r)
}

func (g goDevice) ComputeRunningProcesses(dst []processInfo) ([]processInfo, status) {
	ps, r := g.d.GetComputeRunningProcesses()
	return appendProcesses(dst[:0], ps), status(r)
}

func (g goDevice) GraphicsRunningProcesses(dst []processInfo) ([]processInfo, status) {
	ps, r := g.d.GetGraphicsRunningProcesses()
	return appendProcesses(dst[:0], ps), status(r)
}

func appendProcesses(dst []processInfo, ps []gonvml.ProcessInfo) []processInfo {
	for _, p := range ps {
		dst = append(dst, processInfo{
			PID: p.Pid, UsedGPUMemory: p.UsedGpuMemory,
			GPUInstanceID: p.GpuInstanceId, ComputeInstanceID: p.ComputeInstanceId,
		})
	}
	return dst
}

func (g goDevice) ProcessUtilization(dst []processUtilSample, sinceMicros uint64) ([]processUtilSample, status) {
	dst = dst[:0]
	if !g.sym.procUtil {
		return dst, errFunctionNotFound
	}
	us, r := g.d.GetProcessUtilization(sinceMicros)
	for _, u := range us {
		dst = append(dst, processUtilSample{PID: u.Pid, TimeStamp: u.TimeStamp, SMUtil: u.SmUtil, MemUtil: u.MemUtil})
	}
	return dst, status(r)
}

func (g goDevice) MigMode() (int, int, status) {
	if !g.sym.mig {
		return 0, 0, errFunctionNotFound
	}
	c, p, r := g.d.GetMigMode()
	return c, p, status(r)
}

func (g goDevice) MaxMigDeviceCount() (int, status) {
	if !g.sym.mig {
		return 0, errFunctionNotFound
	}
	n, r := g.d.GetMaxMigDeviceCount()
	return n, status(r)
}

func (g goDevice) MigDeviceByIndex(i int) (device, status) {
	if !g.sym.mig {
		return nil, errFunctionNotFound
	}
	d, r := g.d.GetMigDeviceHandleByIndex(i)
	if r != gonvml.SUCCESS {
		return nil, status(r)
	}
	return goDevice{d: d, sym: g.sym}, success
}

func (g goDevice) Attributes() (attributes, status) {
	if !g.sym.attributes {
		return attributes{}, errFunctionNotFound
	}
	a, r := g.d.GetAttributes()
	return attributes{
		MultiprocessorCount:       a.MultiprocessorCount,
		GPUInstanceSliceCount:     a.GpuInstanceSliceCount,
		ComputeInstanceSliceCount: a.ComputeInstanceSliceCount,
		MemorySizeMB:              a.MemorySizeMB,
	}, status(r)
}

func (g goDevice) SupportedEventTypes() (uint64, status) {
	if !g.sym.events {
		return 0, errFunctionNotFound
	}
	t, r := g.d.GetSupportedEventTypes()
	return t, status(r)
}

func (g goDevice) RegisterEvents(types uint64, set eventSet) status {
	s, ok := set.(*goEventSet)
	if !ok || !g.sym.events {
		return errInvalidArgument
	}
	return status(g.d.RegisterEvents(types, s.set))
}

// builtWithoutCgo tells New why the library could not be loaded.
const builtWithoutCgo = false
