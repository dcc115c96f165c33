package nvml

import (
	"errors"
	"fmt"
	"time"
)

// Config selects what the NVML source reads.
type Config struct {
	// ComputeProcesses includes processes holding a compute (CUDA) context.
	ComputeProcesses bool `yaml:"compute_processes"`
	// GraphicsProcesses includes processes holding a graphics (OpenGL, Vulkan)
	// context. A process with both is reported once.
	GraphicsProcesses bool `yaml:"graphics_processes"`
	// ProcessUtilWindow is how far back a tick asks NVML for per-process
	// utilisation samples when it has read none yet (the first tick, or after a
	// gap); otherwise a tick reads the samples since the newest one it has seen.
	// Set it to at least the collector interval.
	ProcessUtilWindow time.Duration `yaml:"process_util_window"`
	// MIG reports each MIG instance of a MIG-enabled GPU as its own GPU sample;
	// false reports the whole GPU.
	MIG bool `yaml:"mig"`
	// PCIe reads PCIe throughput. Each of the two reads per GPU blocks for 20 ms in
	// the driver (GPUs are read in parallel).
	PCIe bool `yaml:"pcie"`
	// ProcRoot is where /proc/<pid>/comm is read for process names: "/host/proc"
	// when the collector runs in a container with the host's /proc mounted there.
	ProcRoot string `yaml:"proc_root"`
}

// DefaultConfig reads everything: compute and graphics processes, MIG instances,
// PCIe, process utilisation looking back at most 10 s, names from /proc.
func DefaultConfig() Config {
	return Config{
		ComputeProcesses:  true,
		GraphicsProcesses: true,
		ProcessUtilWindow: 10 * time.Second,
		MIG:               true,
		PCIe:              true,
		ProcRoot:          "/proc",
	}
}

// maxProcessUtilWindow bounds the look-back; NVML keeps only a few seconds of
// samples, so a longer window reads nothing more.
const maxProcessUtilWindow = 10 * time.Minute

// Validate reports every field out of range; each line starts with the field's
// yaml name.
func (c Config) Validate() error {
	var errs []error
	if c.ProcessUtilWindow <= 0 || c.ProcessUtilWindow > maxProcessUtilWindow {
		errs = append(errs, fmt.Errorf("process_util_window: must be in (0, %s], got %s", maxProcessUtilWindow, c.ProcessUtilWindow))
	}
	if c.ProcRoot == "" {
		errs = append(errs, errors.New(`proc_root: empty (use "/proc", or where the host's /proc is mounted)`))
	}
	return errors.Join(errs...)
}
