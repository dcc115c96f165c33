//go:build cgo

package nvml

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// TestStatusMatchesGoNVML: the package's return codes are NVML's, so that
// converting go-nvml's Return is a plain conversion.
func TestStatusMatchesGoNVML(t *testing.T) {
	codes := map[status]gonvml.Return{
		success: gonvml.SUCCESS, errUninitialized: gonvml.ERROR_UNINITIALIZED,
		errNotSupported: gonvml.ERROR_NOT_SUPPORTED, errNoPermission: gonvml.ERROR_NO_PERMISSION,
		errNotFound: gonvml.ERROR_NOT_FOUND, errDriverNotLoaded: gonvml.ERROR_DRIVER_NOT_LOADED,
		errLibraryNotFound: gonvml.ERROR_LIBRARY_NOT_FOUND, errFunctionNotFound: gonvml.ERROR_FUNCTION_NOT_FOUND,
		errGPUIsLost: gonvml.ERROR_GPU_IS_LOST, errLibRMVersionMismatch: gonvml.ERROR_LIB_RM_VERSION_MISMATCH,
		errUnknown: gonvml.ERROR_UNKNOWN, errInvalidArgument: gonvml.ERROR_INVALID_ARGUMENT,
		errTimeout: gonvml.ERROR_TIMEOUT,
	}
	for ours, theirs := range codes {
		if int32(ours) != int32(theirs) {
			t.Errorf("%v = %d, go-nvml %d", ours, ours, theirs)
		}
	}
	// Without the library loaded go-nvml names codes itself, as statusNames does.
	for s, name := range statusNames {
		if got := gonvml.Return(s).Error(); got != name {
			t.Errorf("code %d: go-nvml %q, ours %q", s, got, name)
		}
	}
	if migEnabled != gonvml.DEVICE_MIG_ENABLE || valueNotAvailable != ^uint64(0) || gonvml.VALUE_NOT_AVAILABLE != -1 {
		t.Error("constants differ from go-nvml")
	}
	if int(pcieTx) != int(gonvml.PCIE_UTIL_TX_BYTES) || int(pcieRx) != int(gonvml.PCIE_UTIL_RX_BYTES) {
		t.Error("PCIe counters differ from go-nvml")
	}
	if eventTypeXIDCritical != gonvml.EventTypeXidCriticalError {
		t.Error("the XID event type differs from go-nvml")
	}
}

// TestNewWithoutLibrary: on a host without the driver, New fails with
// ErrNoLibrary rather than crashing, and says what to install.
func TestNewWithoutLibrary(t *testing.T) {
	s, err := New(DefaultConfig())
	if err == nil {
		s.Close()
		t.Skip("libnvidia-ml.so.1 is present on this host")
	}
	t.Logf("New: %v", err)
	if s != nil {
		t.Error("New returned a source with an error")
	}
}
