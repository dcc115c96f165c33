package nvml

import "errors"

var (
	// ErrNoLibrary means libnvidia-ml.so.1 (NVML, shipped with the NVIDIA driver)
	// could not be loaded: the host has no NVIDIA driver, the container was started
	// without it, or the binary was built without cgo.
	ErrNoLibrary = errors.New("nvml: libnvidia-ml.so.1 not found")
	// ErrInit means the library loaded but nvmlInit failed: the kernel module is not
	// loaded, the process may not open /dev/nvidia*, or the library and module
	// versions differ.
	ErrInit = errors.New("nvml: init failed")
	// ErrAllGPUsLost means every GPU of the node answered ERROR_GPU_IS_LOST, so a
	// tick had nothing to sample.
	ErrAllGPUsLost = errors.New("nvml: every GPU is lost")
	// ErrClosed means the source was used after Close.
	ErrClosed = errors.New("nvml: source closed")
)
