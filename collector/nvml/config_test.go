package nvml

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"default", func(*Config) {}, ""},
		{"zero window", func(c *Config) { c.ProcessUtilWindow = 0 }, "process_util_window"},
		{"huge window", func(c *Config) { c.ProcessUtilWindow = time.Hour }, "process_util_window"},
		{"no proc root", func(c *Config) { c.ProcRoot = "" }, "proc_root"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want+":") {
				t.Fatalf("err = %v, want it to start with %s", err, tc.want)
			}
			if _, err := New(c, withLibrary(&fakeLibrary{})); err == nil {
				t.Fatal("New accepted an invalid config")
			}
		})
	}
}

func TestInitError(t *testing.T) {
	noLibHint := "install the NVIDIA driver (nvidia-driver / cuda-drivers) or run on a GPU node"
	if builtWithoutCgo {
		noLibHint = "rebuild with CGO_ENABLED=1"
	}
	tests := []struct {
		st       status
		sentinel error
		hint     string
	}{
		{errLibraryNotFound, ErrNoLibrary, noLibHint},
		{errDriverNotLoaded, ErrInit, "kernel module is not loaded"},
		{errNoPermission, ErrInit, "/dev/nvidia"},
		{errLibRMVersionMismatch, ErrInit, "reboot"},
		{errUnknown, ErrInit, "ERROR_UNKNOWN"},
	}
	for _, tc := range tests {
		t.Run(tc.st.Error(), func(t *testing.T) {
			err := initError(tc.st)
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("initError = %v", err)
			}
		})
	}
	if err := initError(errLibraryNotFound); !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
		t.Errorf("error does not name the library: %v", err)
	}
}
