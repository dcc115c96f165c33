package dcgm

import "errors"

// ErrNoLibrary means libdcgm.so.4, the DCGM client library, could not be loaded. It
// is needed in both modes: embedded, and connected to a host engine (--dcgm-address).
var ErrNoLibrary = errors.New("libdcgm.so.4 not found (install NVIDIA DCGM 4: package datacenter-gpu-manager-4-core, " +
	"formerly datacenter-gpu-manager, or \"dcgm\" from NVIDIA's CUDA repository; the library is needed both to start DCGM " +
	"in-process and to reach a running nv-hostengine or dcgm-exporter with --dcgm-address; or use the nvml source)")

// ErrNoGPUs means DCGM is running but reports no GPU it supports on this node.
var ErrNoGPUs = errors.New("DCGM reports no supported GPU on this node")

// ErrClosed is returned by Sample after Close.
var ErrClosed = errors.New("dcgm source is closed")
