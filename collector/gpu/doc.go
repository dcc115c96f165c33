// Package gpu opens a real node's GPU telemetry: DCGM or NVML, as configured.
//
// In: a Config (auto, dcgm or nvml, and each library's settings). Out: a Source
// (a collector.Source that must be closed) and the kind opened ("dcgm" or "nvml").
// auto tries DCGM first, with NVML listing the GPU processes DCGM cannot, then
// NVML alone; when neither is there it fails, naming both errors: it never falls
// back to a simulation. The native libraries are only loaded when a source is
// opened (the dcgm and nvml packages dlopen them), so this package builds and
// tests on machines without them.
package gpu
