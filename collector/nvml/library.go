package nvml

import "strconv"

// library is the part of NVML the source uses: the devices of one node. gonvml.go
// implements it with github.com/NVIDIA/go-nvml; the tests implement it with recorded
// values (fake_test.go). Every NVML call of the package goes through library and
// device, so the mapping code never needs the driver.
type library interface {
	// DeviceCount is nvmlDeviceGetCount: the GPUs this process may see.
	DeviceCount() (int, status)
	// DeviceByIndex is nvmlDeviceGetHandleByIndex.
	DeviceByIndex(i int) (device, status)
	// Shutdown is nvmlShutdown.
	Shutdown() status
	// DriverVersion is nvmlSystemGetDriverVersion, e.g. "570.86.15".
	DriverVersion() (string, status)
	// EventSetCreate is nvmlEventSetCreate: an empty set that devices register
	// event types with (xid.go). The caller frees it with eventSet.Free.
	EventSetCreate() (eventSet, status)
}

// eventSet is an nvmlEventSet_t. Its calls are not safe for concurrent use
// with each other (NVML does not say they are), so the source makes them under
// its lock.
type eventSet interface {
	// Wait is nvmlEventSetWait(_v2): the oldest undelivered event, or
	// ERROR_TIMEOUT when none arrives within timeoutMs (0: none is waiting now).
	Wait(timeoutMs uint32) (event, status)
	// Free is nvmlEventSetFree.
	Free() status
}

// event is nvmlEventData_t. For an XID (eventTypeXIDCritical) Data is the XID
// and Device the physical GPU it happened on.
type event struct {
	Device            device
	Type              uint64
	Data              uint64
	GPUInstanceID     uint32
	ComputeInstanceID uint32
}

// eventTypeXIDCritical is nvmlEventTypeXidCriticalError, a bit of
// nvmlDeviceGetSupportedEventTypes' mask.
const eventTypeXIDCritical uint64 = 8

// device is one GPU or one MIG instance (a MIG device handle). Values are in NVML's
// units; mapping.go converts them.
type device interface {
	// UUID is "GPU-…" for a GPU, "MIG-…" for a MIG instance.
	UUID() (string, status)
	// Name is the model as the driver names it, e.g. "NVIDIA H100 80GB HBM3".
	Name() (string, status)
	// MemoryInfo is nvmlDeviceGetMemoryInfo(_v2), in bytes.
	MemoryInfo() (memoryInfo, status)
	// UtilizationRates is nvmlDeviceGetUtilizationRates, in percent.
	UtilizationRates() (utilization, status)
	// PowerUsage is nvmlDeviceGetPowerUsage, in milliwatts.
	PowerUsage() (uint32, status)
	// TotalEnergyConsumption is nvmlDeviceGetTotalEnergyConsumption, in
	// millijoules since the driver was loaded.
	TotalEnergyConsumption() (uint64, status)
	// Temperature is nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU), in °C.
	Temperature() (uint32, status)
	// PcieThroughput is nvmlDeviceGetPcieThroughput, in KB/s over a 20 ms window
	// (the call itself takes those 20 ms).
	PcieThroughput(c pcieCounter) (uint32, status)
	// CurrentClocksEventReasons is nvmlDeviceGetCurrentClocksEventReasons (formerly
	// ...ThrottleReasons): a bitmask of why clocks are below their maximum.
	CurrentClocksEventReasons() (uint64, status)
	// TotalEccErrors is nvmlDeviceGetTotalEccErrors with NVML_VOLATILE_ECC: the
	// corrected (single-bit) or uncorrected (double-bit) memory errors since the
	// driver loaded. A card without ECC, or with ECC off, answers not supported.
	TotalEccErrors(uncorrected bool) (uint64, status)
	// ComputeRunningProcesses is nvmlDeviceGetComputeRunningProcesses; the result
	// is appended to dst[:0] so that a caller can reuse its buffer.
	ComputeRunningProcesses(dst []processInfo) ([]processInfo, status)
	// GraphicsRunningProcesses is nvmlDeviceGetGraphicsRunningProcesses, appended
	// to dst[:0].
	GraphicsRunningProcesses(dst []processInfo) ([]processInfo, status)
	// ProcessUtilization is nvmlDeviceGetProcessUtilization: the samples newer than
	// sinceMicros (CPU time, µs since the Unix epoch), appended to dst[:0].
	ProcessUtilization(dst []processUtilSample, sinceMicros uint64) ([]processUtilSample, status)
	// MigMode is nvmlDeviceGetMigMode: the current and pending mode (1: enabled).
	MigMode() (current, pending int, st status)
	// MaxMigDeviceCount is nvmlDeviceGetMaxMigDeviceCount: the MIG slots.
	MaxMigDeviceCount() (int, status)
	// MigDeviceByIndex is nvmlDeviceGetMigDeviceHandleByIndex; an empty slot is
	// errNotFound.
	MigDeviceByIndex(i int) (device, status)
	// Attributes is nvmlDeviceGetAttributes: for a MIG instance its slices and
	// memory.
	Attributes() (attributes, status)
	// SupportedEventTypes is nvmlDeviceGetSupportedEventTypes: a mask of the
	// nvmlEventType bits the GPU can report.
	SupportedEventTypes() (uint64, status)
	// RegisterEvents is nvmlDeviceRegisterEvents: record the GPU's events of
	// these types in set from now on.
	RegisterEvents(types uint64, set eventSet) status
}

// memoryInfo is nvmlMemory_t (v2 when the driver has it), in bytes.
type memoryInfo struct {
	Total    uint64 `json:"total"`
	Reserved uint64 `json:"reserved,omitempty"`
	Free     uint64 `json:"free"`
	Used     uint64 `json:"used"`
}

// utilization is nvmlUtilization_t, in percent over the driver's last sample
// period (1/6 s to 1 s depending on the product).
type utilization struct {
	GPU    uint32 `json:"gpu"`
	Memory uint32 `json:"memory"`
}

// processInfo is nvmlProcessInfo_t. UsedGPUMemory is in bytes, or
// valueNotAvailable when the driver cannot tell (e.g. Windows WDDM, some
// containers).
type processInfo struct {
	PID               uint32 `json:"pid"`
	UsedGPUMemory     uint64 `json:"used_gpu_memory"`
	GPUInstanceID     uint32 `json:"gpu_instance_id"`
	ComputeInstanceID uint32 `json:"compute_instance_id"`
}

// processUtilSample is nvmlProcessUtilizationSample_t: one process over one of
// the driver's sample periods, in percent. TimeStamp is µs since the Unix epoch.
type processUtilSample struct {
	PID       uint32 `json:"pid"`
	TimeStamp uint64 `json:"timestamp"`
	SMUtil    uint32 `json:"sm_util"`
	MemUtil   uint32 `json:"mem_util"`
}

// attributes is the part of nvmlDeviceAttributes_t that names a MIG profile.
type attributes struct {
	MultiprocessorCount       uint32 `json:"multiprocessor_count"`
	GPUInstanceSliceCount     uint32 `json:"gpu_instance_slice_count"`
	ComputeInstanceSliceCount uint32 `json:"compute_instance_slice_count"`
	MemorySizeMB              uint64 `json:"memory_size_mb"`
}

// pcieCounter is nvmlPcieUtilCounter_t.
type pcieCounter int

const (
	pcieTx pcieCounter = 0
	pcieRx pcieCounter = 1
)

// valueNotAvailable is NVML_VALUE_NOT_AVAILABLE as an unsigned long long: the
// driver's "no value" for a process's memory.
const valueNotAvailable = ^uint64(0)

// migEnabled is NVML_DEVICE_MIG_ENABLE.
const migEnabled = 1

// status is an nvmlReturn_t. The values are NVML's (gonvml_test.go checks them
// against go-nvml), so that the recorded fixtures and metric labels use the
// driver's names without depending on the cgo package.
type status int32

const (
	success             status = 0
	errUninitialized    status = 1
	errInvalidArgument  status = 2
	errNotSupported     status = 3
	errNoPermission     status = 4
	errNotFound         status = 6
	errDriverNotLoaded  status = 9
	errTimeout          status = 10
	errLibraryNotFound  status = 12
	errFunctionNotFound status = 13
	errGPUIsLost        status = 15
	// errLibRMVersionMismatch: libnvidia-ml and the kernel module differ.
	errLibRMVersionMismatch status = 18
	errUnknown              status = 999
)

// statusNames are NVML's names for its return codes (nvml.h, nvmlReturn_enum).
var statusNames = map[status]string{
	0: "SUCCESS", 1: "ERROR_UNINITIALIZED", 2: "ERROR_INVALID_ARGUMENT",
	3: "ERROR_NOT_SUPPORTED", 4: "ERROR_NO_PERMISSION", 5: "ERROR_ALREADY_INITIALIZED",
	6: "ERROR_NOT_FOUND", 7: "ERROR_INSUFFICIENT_SIZE", 8: "ERROR_INSUFFICIENT_POWER",
	9: "ERROR_DRIVER_NOT_LOADED", 10: "ERROR_TIMEOUT", 11: "ERROR_IRQ_ISSUE",
	12: "ERROR_LIBRARY_NOT_FOUND", 13: "ERROR_FUNCTION_NOT_FOUND",
	14: "ERROR_CORRUPTED_INFOROM", 15: "ERROR_GPU_IS_LOST", 16: "ERROR_RESET_REQUIRED",
	17: "ERROR_OPERATING_SYSTEM", 18: "ERROR_LIB_RM_VERSION_MISMATCH", 19: "ERROR_IN_USE",
	20: "ERROR_MEMORY", 21: "ERROR_NO_DATA", 22: "ERROR_VGPU_ECC_NOT_SUPPORTED",
	23: "ERROR_INSUFFICIENT_RESOURCES", 24: "ERROR_FREQ_NOT_SUPPORTED",
	25: "ERROR_ARGUMENT_VERSION_MISMATCH", 26: "ERROR_DEPRECATED", 27: "ERROR_NOT_READY",
	28: "ERROR_GPU_NOT_FOUND", 29: "ERROR_INVALID_STATE", 30: "ERROR_RESET_TYPE_NOT_SUPPORTED",
	999: "ERROR_UNKNOWN",
}

// Error returns NVML's name for the code, e.g. "ERROR_GPU_IS_LOST".
func (s status) Error() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "ERROR_" + strconv.Itoa(int(s))
}

// parseStatus is the inverse of status.Error, for fixtures.
func parseStatus(name string) (status, bool) {
	for s, n := range statusNames {
		if n == name {
			return s, true
		}
	}
	return 0, false
}

// unsupported reports whether a code means the device or driver cannot provide the
// value at all (as opposed to a failure worth counting).
func (s status) unsupported() bool {
	return s == errNotSupported || s == errFunctionNotFound
}
