//go:build cgo

package dcgm

import (
	"encoding/binary"
	"errors"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpupool/gpupool/schemas"
)

// These tests use go-dcgm's constants and types only: no go-dcgm function runs
// unless the real Init succeeded.

// TestAliasTableMatchesGoDCGM checks the alias table against go-dcgm v1.4611.0's
// constants, for both generations of names.
func TestAliasTableMatchesGoDCGM(t *testing.T) {
	tests := []struct {
		name string
		id   dcgm.Short
	}{
		{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", dcgm.DCGM_FI_PROF_GR_ENGINE_ACTIVE},
		{"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", dcgm.DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO},
		{"DCGM_FI_PROF_SM_ACTIVE", dcgm.DCGM_FI_PROF_SM_ACTIVE},
		{"DCGM_FI_PROF_SM_UTIL_RATIO", dcgm.DCGM_FI_PROF_SM_UTIL_RATIO},
		{"DCGM_FI_PROF_SM_OCCUPANCY", dcgm.DCGM_FI_PROF_SM_OCCUPANCY},
		{"DCGM_FI_PROF_SM_OCCUPANCY_RATIO", dcgm.DCGM_FI_PROF_SM_OCCUPANCY_RATIO},
		{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", dcgm.DCGM_FI_PROF_PIPE_TENSOR_ACTIVE},
		{"DCGM_FI_PROF_TENSOR_UTIL_RATIO", dcgm.DCGM_FI_PROF_TENSOR_UTIL_RATIO},
		{"DCGM_FI_PROF_DRAM_ACTIVE", dcgm.DCGM_FI_PROF_DRAM_ACTIVE},
		{"DCGM_FI_PROF_DRAM_UTIL_RATIO", dcgm.DCGM_FI_PROF_DRAM_UTIL_RATIO},
		{"DCGM_FI_PROF_PCIE_TX_BYTES", dcgm.DCGM_FI_PROF_PCIE_TX_BYTES},
		{"DCGM_FI_PROF_PCIE_RX_BYTES", dcgm.DCGM_FI_PROF_PCIE_RX_BYTES},
		{"DCGM_FI_DEV_PCIE_TX_THROUGHPUT", dcgm.DCGM_FI_DEV_PCIE_TX_THROUGHPUT},
		{"DCGM_FI_DEV_PCIE_RX_THROUGHPUT", dcgm.DCGM_FI_DEV_PCIE_RX_THROUGHPUT},
		{"DCGM_FI_DEV_GPU_UTIL", dcgm.DCGM_FI_DEV_GPU_UTIL},
		{"DCGM_FI_DEV_GPU_UTIL_RATIO", dcgm.DCGM_FI_DEV_GPU_UTIL_RATIO},
		{"DCGM_FI_DEV_FB_TOTAL", dcgm.DCGM_FI_DEV_FB_TOTAL},
		{"DCGM_FI_DEV_FB_USED", dcgm.DCGM_FI_DEV_FB_USED},
		{"DCGM_FI_DEV_POWER_USAGE", dcgm.DCGM_FI_DEV_POWER_USAGE},
		{"DCGM_FI_DEV_BOARD_POWER_WATTS", dcgm.DCGM_FI_DEV_BOARD_POWER_WATTS},
		{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", dcgm.DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION},
		{"DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", dcgm.DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL},
		{"DCGM_FI_DEV_GPU_TEMP", dcgm.DCGM_FI_DEV_GPU_TEMP},
		{"DCGM_FI_DEV_GPU_TEMP_CELSIUS", dcgm.DCGM_FI_DEV_GPU_TEMP_CELSIUS},
		{"DCGM_FI_DEV_XID_ERRORS", dcgm.DCGM_FI_DEV_XID_ERRORS},
		{"DCGM_FI_DEV_XID_ERROR", dcgm.DCGM_FI_DEV_XID_ERROR},
		{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", dcgm.DCGM_FI_DEV_CLOCK_THROTTLE_REASONS},
		{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", dcgm.DCGM_FI_DEV_CLOCKS_EVENT_REASONS},
		{"DCGM_FI_DEV_NAME", dcgm.DCGM_FI_DEV_NAME},
		{"DCGM_FI_DEV_GPU_NAME", dcgm.DCGM_FI_DEV_GPU_NAME},
		{"DCGM_FI_DEV_UUID", dcgm.DCGM_FI_DEV_UUID},
		{"DCGM_FI_DEV_GPU_UUID", dcgm.DCGM_FI_DEV_GPU_UUID},
		{"DCGM_FI_DEV_NVML_INDEX", dcgm.DCGM_FI_DEV_NVML_INDEX},
		{"DCGM_FI_DEV_MIG_MAX_SLICES", dcgm.DCGM_FI_DEV_MIG_MAX_SLICES},
	}
	for _, tt := range tests {
		if f, ok := ResolveField(tt.name); !ok || f.ID != uint16(tt.id) {
			t.Errorf("ResolveField(%s) = %+v, %v; go-dcgm says %d", tt.name, f, ok, tt.id)
		}
	}
	// Every canonical name of the table is go-dcgm's current name of the ID.
	for _, f := range fieldSpecs {
		if !strings.HasPrefix(f.Name, "DCGM_FI_") {
			t.Errorf("field %d: canonical name %q", f.ID, f.Name)
		}
	}
	// Blank values and types agree with go-dcgm's.
	if int64Blank != dcgm.DCGM_FT_INT64_BLANK || int32Blank != dcgm.DCGM_FT_INT32_BLANK || fp64Blank != dcgm.DCGM_FT_FP64_BLANK || strBlank != dcgm.DCGM_FT_STR_BLANK {
		t.Error("blank values differ from go-dcgm's")
	}
	if statusNotSupported != dcgm.DCGM_ST_NOT_SUPPORTED {
		t.Error("DCGM_ST_NOT_SUPPORTED differs")
	}
	for _, p := range [][2]uint{{uint(typeInt64), dcgm.DCGM_FT_INT64}, {uint(typeDouble), dcgm.DCGM_FT_DOUBLE}, {uint(typeString), dcgm.DCGM_FT_STRING}, {uint(typeTimestamp), dcgm.DCGM_FT_TIMESTAMP}} {
		if p[0] != p[1] {
			t.Errorf("value type %c differs from go-dcgm's %c", p[0], p[1])
		}
	}
	for _, h := range [][2]uint{{uint(healthPCIe), uint(dcgm.DCGM_HEALTH_WATCH_PCIE)}, {uint(healthNVLink), uint(dcgm.DCGM_HEALTH_WATCH_NVLINK)},
		{uint(healthMem), uint(dcgm.DCGM_HEALTH_WATCH_MEM)}, {uint(healthThermal), uint(dcgm.DCGM_HEALTH_WATCH_THERMAL)}, {uint(healthPower), uint(dcgm.DCGM_HEALTH_WATCH_POWER)},
		{uint(healthResultWarn), uint(dcgm.DCGM_HEALTH_RESULT_WARN)}, {uint(healthResultFail), uint(dcgm.DCGM_HEALTH_RESULT_FAIL)}} {
		if h[0] != h[1] {
			t.Errorf("health constant %#x differs from go-dcgm's %#x", h[0], h[1])
		}
	}
}

// fieldValue builds a go-dcgm value the way go-dcgm fills it from C.
func fieldValue(group dcgm.Field_Entity_Group, id uint, field uint16, typ uint, raw uint64, s *string) *dcgm.FieldValue_v2 {
	fv := &dcgm.FieldValue_v2{Version: 2, EntityGroupId: group, EntityID: id, FieldID: dcgm.Short(field), FieldType: typ, TS: 1_764_576_010_000_000, StringValue: s}
	binary.NativeEndian.PutUint64(fv.Value[:8], raw)
	return fv
}

func TestFromFieldValue(t *testing.T) {
	name := "NVIDIA H100 80GB HBM3"
	tests := []struct {
		name string
		fv   *dcgm.FieldValue_v2
		want value
		ok   bool
	}{
		{"int64 on a GPU", fieldValue(dcgm.FE_GPU, 3, 252, dcgm.DCGM_FT_INT64, 78211, nil),
			value{Entity: entity{entityGPU, 3}, Field: 252, Type: typeInt64, Int: 78211}, true},
		{"int64 blank", fieldValue(dcgm.FE_GPU, 0, 156, dcgm.DCGM_FT_INT64, uint64(int64Blank), nil),
			value{Entity: entity{entityGPU, 0}, Field: 156, Type: typeInt64, Int: int64Blank}, true},
		{"double on a GPU instance", fieldValue(dcgm.FE_GPU_I, 7, 1002, dcgm.DCGM_FT_DOUBLE, math.Float64bits(0.8734), nil),
			value{Entity: entity{entityGPUInstance, 7}, Field: 1002, Type: typeDouble, Float: 0.8734}, true},
		{"fp64 blank", fieldValue(dcgm.FE_GPU, 0, 1002, dcgm.DCGM_FT_DOUBLE, math.Float64bits(fp64Blank), nil),
			value{Entity: entity{entityGPU, 0}, Field: 1002, Type: typeDouble, Float: fp64Blank}, true},
		{"string", fieldValue(dcgm.FE_GPU, 0, 50, dcgm.DCGM_FT_STRING, 0, &name),
			value{Entity: entity{entityGPU, 0}, Field: 50, Type: typeString, Str: name}, true},
		{"compute instance", fieldValue(dcgm.FE_GPU_CI, 2, 252, dcgm.DCGM_FT_INT64, 5, nil),
			value{Entity: entity{entityComputeInstance, 2}, Field: 252, Type: typeInt64, Int: 5}, true},
		{"NVLink entity is ignored", fieldValue(dcgm.FE_LINK, 0, 252, dcgm.DCGM_FT_INT64, 5, nil), value{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := fromFieldValue(tt.fv)
			if ok != tt.ok {
				t.Fatalf("ok = %v", ok)
			}
			if ok {
				tt.want.TSMicros = 1_764_576_010_000_000
			}
			if got != tt.want {
				t.Errorf("fromFieldValue = %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("string without StringValue", func(t *testing.T) {
		fv := fieldValue(dcgm.FE_GPU, 0, 54, dcgm.DCGM_FT_STRING, 0, nil)
		copy(fv.Value[:], "GPU-1234\x00garbage")
		if v, _ := fromFieldValue(fv); v.Str != "GPU-1234" {
			t.Errorf("Str = %q", v.Str)
		}
	})
	t.Run("status", func(t *testing.T) {
		fv := fieldValue(dcgm.FE_GPU, 0, 1002, dcgm.DCGM_FT_DOUBLE, 0, nil)
		fv.Status = dcgm.DCGM_ST_NOT_SUPPORTED
		v, _ := fromFieldValue(fv)
		if _, rd := number(v, &fieldSpecs[1]); rd != readingUnsupported {
			t.Errorf("reading %v", rd)
		}
	})
}

func TestEntityKinds(t *testing.T) {
	for _, k := range []entityKind{entityGPU, entityGPUInstance, entityComputeInstance} {
		if got, ok := kindFromDCGM(kindToDCGM(k)); !ok || got != k {
			t.Errorf("kind %v round-trips to %v", k, got)
		}
	}
}

// TestOnlyGodcgmImportsGoDCGM keeps go-dcgm behind the engine: it may be called
// only from godcgm.go, whose only constructor runs dcgm.Init first.
func TestOnlyGodcgmImportsGoDCGM(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "godcgm.go" {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "github.com/NVIDIA/go-dcgm") {
				t.Errorf("%s imports %s; only godcgm.go may", f, p)
			}
		}
	}
	src, err := os.ReadFile("godcgm.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "dcgm.Init("); n != 3 {
		t.Errorf("godcgm.go calls dcgm.Init %d times, want 3 (embedded, unix, tcp) all in openGoDCGM", n)
	}
	if n := strings.Count(string(src), "&goDCGM{"); n != 1 {
		t.Errorf("godcgm.go builds goDCGM %d times, want once, in openGoDCGM after Init", n)
	}
}

// TestNewWithoutLibrary: without libdcgm.so.4, New fails with ErrNoLibrary, says
// how to get it, and has called nothing in go-dcgm (else this test binary would
// have aborted).
func TestNewWithoutLibrary(t *testing.T) {
	if probeLibrary() == nil {
		t.Skip("libdcgm.so.4 is installed here; TestRealDCGM covers this machine")
	}
	s, err := New(DefaultConfig(), nil)
	if !errors.Is(err, ErrNoLibrary) || s != nil {
		t.Fatalf("New = %v, %v; want ErrNoLibrary", s, err)
	}
	for _, want := range []string{"libdcgm.so.4", "datacenter-gpu-manager", "--dcgm-address", "dlopen"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	cfg := DefaultConfig()
	cfg.Address = "localhost:5555"
	if _, err := New(cfg, nil); !errors.Is(err, ErrNoLibrary) {
		t.Errorf("host-engine mode: %v, want ErrNoLibrary (the client library is needed too)", err)
	}
	cfg.UpdateInterval = 0
	if _, err := New(cfg, nil); err == nil || errors.Is(err, ErrNoLibrary) {
		t.Errorf("invalid config: %v, want a config error before loading anything", err)
	}
}

// TestRealDCGM runs the source against the real DCGM when there is one
// (GPUPOOL_TEST_DCGM_ADDRESS selects a host engine; empty means embedded).
func TestRealDCGM(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Address = os.Getenv("GPUPOOL_TEST_DCGM_ADDRESS")
	s, err := New(cfg, nil)
	if err != nil {
		t.Skipf("no libdcgm.so.4: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	var b schemas.SampleBatch
	for range 2 {
		time.Sleep(cfg.UpdateInterval)
		b.Reset()
		if err := s.Sample(t.Context(), time.Now(), &b); err != nil {
			t.Fatal(err)
		}
	}
	if len(b.GPUs) == 0 {
		t.Fatal("no GPU rows")
	}
	for _, g := range b.GPUs {
		t.Logf("%s %s %s %s fb %d/%d MiB power %v W util %v sm %v", g.GPUUUID, g.Model, g.Card, g.MIGProfile, g.FBUsedMiB, g.FBTotalMiB, g.PowerW, g.GPUUtil, g.SMActive)
		if g.GPUUUID == "" || g.FBTotalMiB == 0 || schemas.IsMissing(g.PowerW) {
			t.Errorf("row %+v lacks UUID, memory or power", g)
		}
	}
}

// TestGoDCGMInit calls go-dcgm's Init directly, without the library probe: without
// libdcgm.so.4 it must fail cleanly (its dlopen fails) rather than abort.
func TestGoDCGMInit(t *testing.T) {
	e, err := openGoDCGM(DefaultConfig())
	if err != nil {
		t.Skipf("no libdcgm.so.4: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Error(err)
	}
	if _, err := e.SupportedGPUs(); !errors.Is(err, errEngineClosed) {
		t.Errorf("engine after Close: %v, want errEngineClosed", err)
	}
}
