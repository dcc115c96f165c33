// Package dcgm is a collector.Source that reads NVIDIA DCGM (Data Center GPU
// Manager) through github.com/NVIDIA/go-dcgm.
//
// Build: go-dcgm is a cgo package, so reading DCGM needs CGO_ENABLED=1 and a C
// compiler. Nothing is linked against DCGM: libdcgm.so.4 is dlopened by New
// (through dcgm.Init), so a binary that contains this package starts, and its tests
// run, on a machine without DCGM. Built with CGO_ENABLED=0 the package still
// compiles (go-dcgm is left out) and New fails with ErrNoLibrary.
//
// In: the node's GPUs as DCGM sees them, either through a host engine started inside
// this process (Config.Address empty, "embedded" mode) or through a running
// nv-hostengine, for example the one dcgm-exporter uses (Config.Address
// "host:5555" or "unix:///path"). DCGM has no call that lists a GPU's processes, so
// the caller passes a ProcessLister (NVML's or /proc's list); DCGM's per-process
// statistics are added to it where DCGM has them.
//
// Out: per tick, one schemas.GPUSample per whole GPU, or per MIG GPU instance on a
// GPU with MIG instances (UUID "MIG-…", MIGProfile "3g.40gb", Card the parent's card
// type), and the lister's schemas.ProcessSamples. XID errors and DCGM health
// incidents (PCIe, memory, thermal, power, NVLink watches) are delivered as Events to
// the handler given with WithEventHandler.
//
// Units, as the trace format has them: activity ratios 0..1 (the DCGM_FI_PROF_*
// fields are ratios already; DCGM_FI_DEV_GPU_UTIL is a percentage and is divided by
// 100), memory MiB, power W, energy mJ (a counter; DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL
// is converted from J), ECC errors as counts (DCGM_FI_DEV_ECC_SBE_VOL_TOTAL and
// DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, volatile: since the driver loaded; a MIG instance
// carries its card's; they never go stale, as DCGM updates them only on a change),
// PCIe bytes per second (the deprecated
// DCGM_FI_DEV_PCIE_*_THROUGHPUT fallback is converted from KiB/s), temperature °C.
// DCGM's blank and sentinel values (DCGM_FT_INT64_BLANK, DCGM_FT_FP64_BLANK and their
// NOT_FOUND / NOT_SUPPORTED / NOT_PERMISSIONED neighbours), non-zero value statuses
// and values older than Config.MaxKeepAge become schemas.Missing.
//
// Field names: DCGM renamed many fields (DCGM_FI_PROF_SM_ACTIVE is
// DCGM_FI_PROF_SM_UTIL_RATIO in DCGM 4.x; the ID, 1002, and the unit did not change).
// ResolveField accepts either generation, dcgm-exporter's lower-case metric names and
// numeric IDs; ParseFieldsCSV reads a dcgm-exporter counters CSV.
//
// Profiling fields are watched only on GPUs whose DCGM reports them in
// GetSupportedMetricGroups; elsewhere they stay Missing and the gauge
// gpupool_collector_dcgm_field_supported{gpu_uuid,field} is 0 for them.
//
// Safety: go-dcgm aborts the process when any of its functions other than Init is
// called before a successful Init. Only godcgm.go imports go-dcgm, and its only
// constructor is openGoDCGM, which returns an engine only when dcgm.Init succeeded;
// every other function of this package reaches DCGM through that engine.
package dcgm
