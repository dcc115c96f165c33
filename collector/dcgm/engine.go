package dcgm

import (
	"fmt"
	"time"
)

// engine is everything this package asks of DCGM. The real one (goDCGM, in
// godcgm.go) wraps go-dcgm and exists only after a successful dcgm.Init; tests use
// a fake that replays recorded values from testdata/. It speaks in plain values so
// that all the mapping from DCGM's values to gpupool's columns is outside it.
type engine interface {
	// SupportedGPUs returns the DCGM IDs of the GPUs DCGM supports.
	SupportedGPUs() ([]uint32, error)
	// MIGHierarchy returns the MIG GPU instances and compute instances.
	MIGHierarchy() ([]migEntry, error)
	// SupportedProfFields returns the profiling field IDs GetSupportedMetricGroups
	// lists for a GPU; an error means the GPU has no profiling.
	SupportedProfFields(gpu uint32) ([]uint16, error)
	// Watch starts DCGM sampling fields on entities every interval, keeping
	// samples for keepAge.
	Watch(entities []entity, fields []uint16, every, keepAge time.Duration) (watchID, error)
	// Latest returns the latest value of every field of a watch on every entity.
	Latest(w watchID) ([]value, error)
	// Unwatch stops a watch and frees its DCGM groups.
	Unwatch(w watchID) error
	// WatchPIDs starts DCGM's per-process statistics on the GPUs.
	WatchPIDs(gpus []uint32, every, keepAge time.Duration) error
	// PIDInfo returns a process's statistics, one per GPU it used.
	PIDInfo(pid uint32) ([]pidStat, error)
	// WatchHealth enables health watches for systems on the GPUs.
	WatchHealth(gpus []uint32, systems healthSystem) error
	// CheckHealth returns the current health incidents.
	CheckHealth() ([]incident, error)
	// Close frees every DCGM group and shuts DCGM down; the engine is unusable
	// afterwards.
	Close() error
}

// watchID identifies a watch of one engine.
type watchID int

// entityKind is the DCGM entity group of an entity.
type entityKind uint8

const (
	entityGPU             entityKind = iota + 1 // DCGM_FE_GPU
	entityGPUInstance                           // DCGM_FE_GPU_I, a MIG GPU instance
	entityComputeInstance                       // DCGM_FE_GPU_CI, a MIG compute instance
)

var entityKindNames = map[entityKind]string{entityGPU: "gpu", entityGPUInstance: "gpu_i", entityComputeInstance: "gpu_ci"}

// entity is a DCGM entity: a GPU, a MIG GPU instance or a compute instance.
type entity struct {
	Kind entityKind
	ID   uint32
}

func (e entity) String() string { return fmt.Sprintf("%s/%d", entityKindNames[e.Kind], e.ID) }

// valueType is a DCGM field value type (DCGM_FT_*).
type valueType byte

const (
	typeInt64     valueType = 'i'
	typeDouble    valueType = 'd'
	typeString    valueType = 's'
	typeTimestamp valueType = 't'
)

// value is one field value of one entity as DCGM returned it, before any check or
// unit conversion.
type value struct {
	Entity entity
	Field  uint16
	Type   valueType
	// Status is the DCGM return code of this value (dcgmFieldValue_v2.status);
	// non-zero means there is no value.
	Status int32
	// TSMicros is when DCGM sampled the value, in microseconds since the epoch.
	TSMicros int64
	Int      int64
	Float    float64
	Str      string
}

// migEntry is one entry of DCGM's MIG hierarchy.
type migEntry struct {
	Entity, Parent entity
	// ParentUUID is the UUID of the physical GPU.
	ParentUUID            string
	NVMLGPUIndex          uint32
	NVMLInstanceID        uint32
	NVMLComputeInstanceID uint32
	NVMLProfileID         uint32
	// Slices is the number of compute slices of the instance's profile.
	Slices uint32
}

// pidStat is DCGM's statistics of one process on one GPU (dcgmPidSingleInfo_t).
type pidStat struct {
	GPU  uint32
	Name string
	// SMUtilPct and MemUtilPct are the process's share of SM time and of memory
	// bandwidth in percent, as DCGM reports them (blank values possible).
	SMUtilPct  float64
	MemUtilPct float64
	// MaxMemUsedBytes is the most GPU memory the process used.
	MaxMemUsedBytes int64
}

// healthSystem is a bitmask of DCGM health watch systems (DCGM_HEALTH_WATCH_*).
type healthSystem uint32

const (
	healthPCIe    healthSystem = 0x1
	healthNVLink  healthSystem = 0x2
	healthPMU     healthSystem = 0x4
	healthMCU     healthSystem = 0x8
	healthMem     healthSystem = 0x10
	healthSM      healthSystem = 0x20
	healthInforom healthSystem = 0x40
	healthThermal healthSystem = 0x80
	healthPower   healthSystem = 0x100
	healthDriver  healthSystem = 0x200
)

// watchedHealth are the health systems the source enables.
const watchedHealth = healthPCIe | healthMem | healthThermal | healthPower | healthNVLink

// healthResult is a DCGM health result (DCGM_HEALTH_RESULT_*).
type healthResult uint32

const (
	healthResultPass healthResult = 0
	healthResultWarn healthResult = 10
	healthResultFail healthResult = 20
)

// incident is one DCGM health incident.
type incident struct {
	Entity  entity
	System  healthSystem
	Health  healthResult
	Code    uint32
	Message string
}
