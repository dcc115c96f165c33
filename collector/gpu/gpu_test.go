package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/collector/dcgm"
	"github.com/gpupool/gpupool/collector/nvml"
)

// skipWithGPUs skips a test of what happens without GPU libraries on a machine
// that has one.
func skipWithGPUs(t *testing.T) {
	t.Helper()
	if s, err := nvml.New(nvml.DefaultConfig()); err == nil {
		_ = s.Close()
		t.Skip("NVML initialises on this machine: the test is of a machine without GPUs")
	}
	if s, err := dcgm.New(dcgm.DefaultConfig(), nil); err == nil {
		_ = s.Close()
		t.Skip("DCGM initialises on this machine: the test is of a machine without GPUs")
	}
}

// TestOpenWithoutGPUs: with neither library, each choice fails with the error of
// what it tried, and auto names both and says what to use instead.
func TestOpenWithoutGPUs(t *testing.T) {
	skipWithGPUs(t)
	tests := []struct {
		source  string
		is      error
		want    []string
		notWant []string
	}{
		{KindAuto, nil, []string{"no GPU telemetry", "DCGM: ", "libdcgm.so.4", "NVML: ", "libnvidia-ml.so.1", "--source sim or --source replay"}, nil},
		{KindDCGM, dcgm.ErrNoLibrary, []string{"libdcgm.so.4"}, []string{"NVML: ", "--source sim"}},
		{KindNVML, nvml.ErrNoLibrary, []string{"libnvidia-ml.so.1"}, []string{"DCGM: ", "--source sim"}},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Source = tt.source
			src, kind, err := Open(cfg, WithRegisterer(prometheus.NewRegistry()))
			if err == nil {
				_ = src.Close()
				t.Fatalf("opened %s", kind)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q names %q", err, w)
				}
			}
		})
	}
}

func TestOpenRejectsOtherSources(t *testing.T) {
	for _, source := range []string{"", "sim", "replay"} {
		cfg := DefaultConfig()
		cfg.Source = source
		if _, _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "source") {
			t.Errorf("Open(source %q) = %v, want an error naming the source", source, err)
		}
	}
}
