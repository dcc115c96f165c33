// Package nvml is a collector.Source reading the node's GPUs through NVIDIA's
// management library (NVML, libnvidia-ml.so.1, part of the driver) via
// github.com/NVIDIA/go-nvml.
//
// In: NVML, loaded with dlopen by New (a host without the driver gets
// ErrNoLibrary, and no other NVML call is made), and /proc/<pid>/comm under
// Config.ProcRoot for process names.
//
// Out, per tick: one schemas.GPUSample per GPU, or per MIG instance of a
// MIG-enabled GPU ("MIG-…" UUID, MIGProfile such as "1g.10gb", the parent's card
// type), and one schemas.ProcessSample per process on each (compute and graphics
// contexts, one row per PID). Units: memory MiB (NVML's bytes / 2^20, rounded
// down), utilisation ratios 0..1 (NVML's percent / 100), power W (mW / 1000),
// energy mJ (NVML's counter as is), PCIe bytes/s (NVML's KB/s × 1024),
// temperature °C, clock event reasons as NVML's bitmask, and the volatile ECC
// error counts (nvmlDeviceGetTotalEccErrors, corrected and uncorrected, since the
// driver loaded; 0 on a card without ECC, named once as ecc_volatile in
// gpupool_nvml_field_unsupported).
//
// NVML has no DCGM profiling metrics: SMActive, TensorActive and the other
// activity ratios stay schemas.Missing, and GPUUtil carries NVML's utilization.gpu.
// XID errors come from an NVML event set (xid.go): each GPU that supports
// nvmlEventTypeXidCriticalError registers it, each Sample drains the set without
// waiting, and a GPU's XID goes on its next sample's rows (its MIG instances'
// too), 0 when it had none; the last one wins when several come between two
// samples, as in DCGM's XID field. A GPU that cannot report XIDs is named once
// as xid in gpupool_nvml_field_unsupported. Per-process SM and
// memory shares are the mean of nvmlDeviceGetProcessUtilization's samples since
// the previous tick, Missing when the GPU does not report them (MIG, vGPU) or has
// none for the process. On MIG instances power, energy and PCIe traffic, which
// belong to the whole card, are left Missing (0 for energy) so that summing
// instances does not count the card several times; temperature and clock event
// reasons and the ECC counts are the card's.
//
// A value NVML cannot give is left Missing and named once in
// gpupool_nvml_field_unsupported{gpu_uuid,field}; other failed calls are counted in
// gpupool_nvml_call_errors_total{function,error}. A GPU answering
// ERROR_GPU_IS_LOST is skipped, logged and counted in gpupool_nvml_gpus_lost while
// the others are still sampled.
//
// go-nvml needs cgo; built with CGO_ENABLED=0 the package compiles but New
// always returns ErrNoLibrary.
package nvml
