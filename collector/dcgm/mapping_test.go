package dcgm

import (
	"math"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

func spec(t *testing.T, id uint16) *fieldSpec {
	t.Helper()
	i, ok := specIndex(id)
	if !ok {
		t.Fatalf("field %d not in the alias table", id)
	}
	return &fieldSpecs[i]
}

func TestNumberSentinels(t *testing.T) {
	tests := []struct {
		name  string
		field uint16
		v     value
		want  reading
		n     float64
	}{
		{"int64 value", fidFBUsed, value{Type: typeInt64, Int: 78211}, readingOK, 78211},
		{"DCGM_FT_INT64_BLANK", fidFBUsed, value{Type: typeInt64, Int: int64Blank}, readingBlank, 0},
		{"DCGM_FT_INT64_NOT_FOUND", fidFBUsed, value{Type: typeInt64, Int: int64Blank + 1}, readingBlank, 0},
		{"DCGM_FT_INT64_NOT_SUPPORTED", fidEnergyMilliJ, value{Type: typeInt64, Int: int64Blank + 2}, readingUnsupported, 0},
		{"DCGM_FT_INT64_NOT_PERMISSIONED", fidEnergyMilliJ, value{Type: typeInt64, Int: int64Blank + 3}, readingNoPermission, 0},
		{"max int64 is blank too", fidEnergyMilliJ, value{Type: typeInt64, Int: math.MaxInt64}, readingBlank, 0},
		{"DCGM_FT_INT32_BLANK on a small field", fidGPUTemp, value{Type: typeInt64, Int: int32Blank}, readingBlank, 0},
		{"DCGM_FT_INT32_NOT_SUPPORTED on a small field", fidGPUUtil, value{Type: typeInt64, Int: int32Blank + 2}, readingUnsupported, 0},
		{"2^31-16 mJ is a real energy reading", fidEnergyMilliJ, value{Type: typeInt64, Int: int32Blank}, readingOK, int32Blank},
		{"DCGM_FT_FP64_BLANK", fidProfSMActive, value{Type: typeDouble, Float: fp64Blank}, readingBlank, 0},
		{"DCGM_FT_FP64_NOT_FOUND", fidProfSMActive, value{Type: typeDouble, Float: fp64Blank + 1}, readingBlank, 0},
		{"DCGM_FT_FP64_NOT_SUPPORTED", fidProfSMActive, value{Type: typeDouble, Float: fp64Blank + 2}, readingUnsupported, 0},
		{"DCGM_FT_FP64_NOT_PERMISSIONED", fidProfSMActive, value{Type: typeDouble, Float: fp64Blank + 3}, readingNoPermission, 0},
		{"double above the blanks", fidPower, value{Type: typeDouble, Float: 1e300}, readingInvalid, 0},
		{"NaN", fidPower, value{Type: typeDouble, Float: math.NaN()}, readingInvalid, 0},
		{"+Inf", fidPower, value{Type: typeDouble, Float: math.Inf(1)}, readingInvalid, 0},
		{"negative", fidPower, value{Type: typeDouble, Float: -1}, readingInvalid, 0},
		{"status NOT_SUPPORTED", fidPower, value{Type: typeDouble, Float: 300, Status: -6}, readingUnsupported, 0},
		{"status NO_DATA", fidPower, value{Type: typeDouble, Float: 300, Status: -14}, readingError, 0},
		{"string where a number is due", fidPower, value{Type: typeString, Str: "300"}, readingInvalid, 0},
		{"timestamp type", fidXID, value{Type: typeTimestamp, Int: 43}, readingOK, 43},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, rd := number(tt.v, spec(t, tt.field))
			if rd != tt.want || n != tt.n {
				t.Errorf("number = %v, %v; want %v, %v", n, rd, tt.n, tt.want)
			}
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		in   value
		want reading
	}{
		{value{Type: typeString, Str: "NVIDIA H100 80GB HBM3"}, readingOK},
		{value{Type: typeString, Str: "<<<NULL>>>"}, readingBlank},
		{value{Type: typeString, Str: "<<<NOT_FOUND>>>"}, readingBlank},
		{value{Type: typeString, Str: "<<<NOT_SUPPORTED>>>"}, readingUnsupported},
		{value{Type: typeString, Str: "<<<NOT_PERMISSIONED>>>"}, readingNoPermission},
		{value{Type: typeString, Str: ""}, readingBlank},
		{value{Type: typeInt64, Int: 3}, readingInvalid},
		{value{Type: typeString, Str: "x", Status: -3}, readingError},
	}
	for _, tt := range tests {
		if _, rd := text(tt.in); rd != tt.want {
			t.Errorf("text(%+v) = %v, want %v", tt.in, rd, tt.want)
		}
	}
}

// TestColumnUnits converts one recorded value of every field to its column.
func TestColumnUnits(t *testing.T) {
	const at = int64(1_000_000_000_000)
	tests := []struct {
		name  string
		field uint16
		v     value
		col   column
		want  float64
	}{
		{"PROF ratio stays a ratio", fidProfGrEngine, value{Type: typeDouble, Float: 0.25}, colGrEngineActive, 0.25},
		{"DCGM_FI_PROF_PCIE_TX_BYTES is bytes/s", fidProfPCIeTx, value{Type: typeInt64, Int: 5_000_000}, colPCIeTx, 5_000_000},
		{"DCGM_FI_DEV_PCIE_RX_THROUGHPUT is KiB/s", fidPCIeRxKiB, value{Type: typeInt64, Int: 1000}, colPCIeRx, 1_024_000},
		{"GPU_UTIL percent → ratio", fidGPUUtil, value{Type: typeInt64, Int: 62}, colGPUUtil, 0.62},
		{"GPU_UTIL as a double percent", fidGPUUtil, value{Type: typeDouble, Float: 62}, colGPUUtil, 0.62},
		{"power W", fidPower, value{Type: typeDouble, Float: 350.5}, colPower, 350.5},
		{"energy mJ", fidEnergyMilliJ, value{Type: typeInt64, Int: 123456789}, colEnergy, 123456789},
		{"energy J → mJ", fidEnergyJoules, value{Type: typeDouble, Float: 123456.789}, colEnergy, 123456789},
		{"memory MiB", fidFBTotal, value{Type: typeInt64, Int: 81559}, colFBTotal, 81559},
		{"temperature °C", fidGPUTemp, value{Type: typeInt64, Int: 54}, colTemp, 54},
		{"clock event bitmask", fidClockEvents, value{Type: typeInt64, Int: 0x48}, colClockEventReasons, 0x48},
		{"XID code", fidXID, value{Type: typeInt64, Int: 79}, colXID, 79},
		{"ECC single-bit count", fidECCSBEVolatile, value{Type: typeInt64, Int: 12}, colECCSBE, 12},
		{"ECC double-bit count", fidECCDBEVolatile, value{Type: typeInt64, Int: 1}, colECCDBE, 1},
	}
	m := mapper{staleMicros: 30e6}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r readings
			i, _ := specIndex(tt.field)
			tt.v.Field, tt.v.TSMicros = tt.field, at-1000
			r.set(i, tt.v)
			n, rd := m.column(&r, tt.col, at)
			if rd != readingOK || math.Abs(n-tt.want) > 1e-6*math.Max(1, tt.want) {
				t.Errorf("column = %v, %v; want %v", n, rd, tt.want)
			}
		})
	}
}

// TestECCCountersDoNotGoStale: an ECC count DCGM last updated an hour ago is
// still the count (it changes only when an error happens); a ratio that old is
// stale.
func TestECCCountersDoNotGoStale(t *testing.T) {
	const at = int64(10_000_000_000_000)
	m := mapper{staleMicros: 30e6}
	var r readings
	for _, f := range []struct {
		id uint16
		v  value
	}{
		{fidECCDBEVolatile, value{Type: typeInt64, Int: 2}},
		{fidProfSMActive, value{Type: typeDouble, Float: 0.5}},
	} {
		i, _ := specIndex(f.id)
		f.v.Field, f.v.TSMicros = f.id, at-3600e6
		r.set(i, f.v)
	}
	if n, rd := m.column(&r, colECCDBE, at); rd != readingOK || n != 2 {
		t.Errorf("ECC DBE an hour old: %v, %v; want 2, ok", n, rd)
	}
	if _, rd := m.column(&r, colSMActive, at); rd != readingStale {
		t.Errorf("SM active an hour old: %v, want stale", rd)
	}
}

func TestColumnPreference(t *testing.T) {
	const at = int64(1_000_000_000_000)
	m := mapper{staleMicros: 30e6}
	set := func(r *readings, id uint16, v value) {
		i, _ := specIndex(id)
		v.Field, v.TSMicros = id, at
		r.set(i, v)
	}
	var r readings
	set(&r, fidProfPCIeTx, value{Type: typeInt64, Int: 100})
	set(&r, fidPCIeTxKiB, value{Type: typeInt64, Int: 1})
	if n, _ := m.column(&r, colPCIeTx, at); n != 100 {
		t.Errorf("both PCIe fields: %v, want the profiling one", n)
	}
	set(&r, fidProfPCIeTx, value{Type: typeInt64, Int: int64Blank + 2})
	if n, rd := m.column(&r, colPCIeTx, at); n != 1024 || rd != readingOK {
		t.Errorf("profiling PCIe unsupported: %v %v, want the throughput field", n, rd)
	}
	var only readings
	set(&only, fidProfPCIeTx, value{Type: typeInt64, Int: int64Blank + 2})
	if _, rd := m.column(&only, colPCIeTx, at); rd != readingUnsupported {
		t.Errorf("reading %v, want unsupported", rd)
	}
	if _, rd := m.column(&only, colPower, at); rd != readingAbsent {
		t.Errorf("unwatched column reading %v", rd)
	}
}

func TestMapUnitWholeAndMIG(t *testing.T) {
	const at = int64(1_000_000_000_000)
	m := mapper{staleMicros: 30e6}
	var gpu, gi readings
	put := func(r *readings, id uint16, v value) {
		i, _ := specIndex(id)
		v.Field, v.TSMicros = id, at
		r.set(i, v)
	}
	put(&gpu, fidPower, value{Type: typeDouble, Float: 280})
	put(&gpu, fidEnergyMilliJ, value{Type: typeInt64, Int: 7000})
	put(&gpu, fidGPUUtil, value{Type: typeInt64, Int: 50})
	put(&gpu, fidGPUTemp, value{Type: typeInt64, Int: 40})
	put(&gi, fidProfSMActive, value{Type: typeDouble, Float: 0.5})
	put(&gi, fidFBUsed, value{Type: typeInt64, Int: 1000})

	var st columnStates
	g := schemas.NewGPUSample()
	m.mapUnit(&unit{MIG: true, Share: 2.0 / 7, FBTotalMiB: 19968}, &gi, &gpu, at, &g, &st)
	if g.PowerW != 80 || g.EnergyMilliJ != 2000 || g.TempC != 40 || g.SMActive != 0.5 || g.FBUsedMiB != 1000 || g.FBTotalMiB != 19968 {
		t.Errorf("MIG row %+v", g)
	}
	if !schemas.IsMissing(g.GPUUtil) || st[colGPUUtil] != readingUnsupported {
		t.Errorf("MIG gpu_util %v (%v), want Missing, unsupported", g.GPUUtil, st[colGPUUtil])
	}
	g = schemas.NewGPUSample()
	m.mapUnit(&unit{Share: 1}, &gpu, nil, at, &g, &st)
	if g.PowerW != 280 || g.EnergyMilliJ != 7000 || g.GPUUtil != 0.5 || !schemas.IsMissing(g.SMActive) {
		t.Errorf("whole row %+v", g)
	}
}
