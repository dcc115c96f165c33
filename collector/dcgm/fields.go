package dcgm

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// column is a GPUSample field (a `gpu` trace record column) that DCGM fields fill.
type column uint8

const (
	colNone column = iota
	colGrEngineActive
	colSMActive
	colSMOccupancy
	colTensorActive
	colDRAMActive
	colPCIeTx
	colPCIeRx
	colGPUUtil
	colFBTotal
	colFBUsed
	colPower
	colEnergy
	colTemp
	colXID
	colClockEventReasons
	colECCSBE
	colECCDBE
	numColumns
)

// columnNames are the trace format's names of the columns; they are the `field`
// label of gpupool_collector_dcgm_field_supported.
var columnNames = [numColumns]string{
	colGrEngineActive:    "gr_engine_active",
	colSMActive:          "sm_active",
	colSMOccupancy:       "sm_occupancy",
	colTensorActive:      "tensor_active",
	colDRAMActive:        "dram_active",
	colPCIeTx:            "pcie_tx_bytes_per_s",
	colPCIeRx:            "pcie_rx_bytes_per_s",
	colGPUUtil:           "gpu_util",
	colFBTotal:           "fb_total_mib",
	colFBUsed:            "fb_used_mib",
	colPower:             "power_w",
	colEnergy:            "energy_mj",
	colTemp:              "temp_c",
	colXID:               "xid",
	colClockEventReasons: "clock_event_reasons",
	colECCSBE:            "ecc_sbe_volatile",
	colECCDBE:            "ecc_dbe_volatile",
}

func (c column) String() string { return columnNames[c] }

// fieldUnit is how DCGM reports a field. scale converts it to the column's unit.
type fieldUnit uint8

const (
	unitNone fieldUnit = iota
	unitRatio
	unitPercent
	unitBytesPerS
	unitKiBPerS
	unitMiB
	unitWatts
	unitMillijoules
	unitJoules
	unitCelsius
	unitCode
	unitBitmask
	unitIndex
	unitCount
)

func (u fieldUnit) scale() float64 {
	switch u {
	case unitPercent:
		return 0.01
	case unitKiBPerS:
		return 1024
	case unitJoules:
		return 1000
	}
	return 1
}

// small reports whether a unit's values always fit in 31 bits, so that DCGM's 32-bit
// blank values (DCGM_FT_INT32_BLANK…) can be told apart from real readings. Counters
// and byte rates can legitimately reach them.
func (u fieldUnit) small() bool {
	switch u {
	case unitPercent, unitMiB, unitWatts, unitCelsius, unitCode, unitIndex:
		return true
	}
	return false
}

// fieldSpec is one DCGM field gpupool reads.
type fieldSpec struct {
	ID uint16
	// Name is the name go-dcgm v1.4611.0 (DCGM 4.x headers) gives the ID.
	Name string
	// Aliases are older names of the same ID and dcgm-exporter's lower-case metric
	// names. DCGM keeps an ID's unit when it renames it; a new unit gets a new ID.
	Aliases []string
	Col     column
	Unit    fieldUnit
	// Type is the DCGM value type the field has ('i' int64, 'd' double, 's'
	// string); the mapping accepts either number type.
	Type valueType
	// Prof marks profiling (DCP) fields, watched only where
	// GetSupportedMetricGroups lists them.
	Prof bool
	// Optional marks fields an older host engine may not know; a watch that fails
	// is retried without them.
	Optional bool
	// Inventory marks fields read once at start (names, UUIDs, MIG size), never
	// watched per tick and not accepted in Config.Fields.
	Inventory bool
}

// DCGM field IDs used by name in this package.
const (
	fidDriverVersion    uint16 = 1
	fidGPUName          uint16 = 50
	fidNVMLIndex        uint16 = 52
	fidGPUUUID          uint16 = 54
	fidMIGMaxSlices     uint16 = 69
	fidClockEvents      uint16 = 112
	fidECCSBEVolatile   uint16 = 310
	fidECCDBEVolatile   uint16 = 311
	fidGPUTemp          uint16 = 150
	fidPower            uint16 = 155
	fidEnergyMilliJ     uint16 = 156
	fidPCIeTxKiB        uint16 = 200
	fidPCIeRxKiB        uint16 = 201
	fidGPUUtil          uint16 = 203
	fidXID              uint16 = 230
	fidFBTotal          uint16 = 250
	fidFBUsed           uint16 = 252
	fidProfGrEngine     uint16 = 1001
	fidProfSMActive     uint16 = 1002
	fidProfSMOccupancy  uint16 = 1003
	fidProfTensorActive uint16 = 1004
	fidProfDRAMActive   uint16 = 1005
	fidProfPCIeTx       uint16 = 1009
	fidProfPCIeRx       uint16 = 1010
	fidEnergyJoules     uint16 = 1611
)

// fieldSpecs is the alias table: every DCGM field gpupool reads, under every name it
// has had. Within a column, earlier entries are preferred when several are watched.
var fieldSpecs = [...]fieldSpec{
	{ID: fidProfGrEngine, Name: "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", Aliases: []string{"DCGM_FI_PROF_GR_ENGINE_ACTIVE"}, Col: colGrEngineActive, Unit: unitRatio, Type: typeDouble, Prof: true},
	{ID: fidProfSMActive, Name: "DCGM_FI_PROF_SM_UTIL_RATIO", Aliases: []string{"DCGM_FI_PROF_SM_ACTIVE"}, Col: colSMActive, Unit: unitRatio, Type: typeDouble, Prof: true},
	{ID: fidProfSMOccupancy, Name: "DCGM_FI_PROF_SM_OCCUPANCY_RATIO", Aliases: []string{"DCGM_FI_PROF_SM_OCCUPANCY"}, Col: colSMOccupancy, Unit: unitRatio, Type: typeDouble, Prof: true},
	{ID: fidProfTensorActive, Name: "DCGM_FI_PROF_TENSOR_UTIL_RATIO", Aliases: []string{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"}, Col: colTensorActive, Unit: unitRatio, Type: typeDouble, Prof: true},
	{ID: fidProfDRAMActive, Name: "DCGM_FI_PROF_DRAM_UTIL_RATIO", Aliases: []string{"DCGM_FI_PROF_DRAM_ACTIVE"}, Col: colDRAMActive, Unit: unitRatio, Type: typeDouble, Prof: true},
	{ID: fidProfPCIeTx, Name: "DCGM_FI_PROF_PCIE_TX_BYTES", Col: colPCIeTx, Unit: unitBytesPerS, Type: typeInt64, Prof: true},
	{ID: fidProfPCIeRx, Name: "DCGM_FI_PROF_PCIE_RX_BYTES", Col: colPCIeRx, Unit: unitBytesPerS, Type: typeInt64, Prof: true},
	{ID: fidPCIeTxKiB, Name: "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", Aliases: []string{"dcgm_pcie_tx_throughput"}, Col: colPCIeTx, Unit: unitKiBPerS, Type: typeInt64, Optional: true},
	{ID: fidPCIeRxKiB, Name: "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", Aliases: []string{"dcgm_pcie_rx_throughput"}, Col: colPCIeRx, Unit: unitKiBPerS, Type: typeInt64, Optional: true},
	{ID: fidGPUUtil, Name: "DCGM_FI_DEV_GPU_UTIL_RATIO", Aliases: []string{"DCGM_FI_DEV_GPU_UTIL", "dcgm_gpu_utilization"}, Col: colGPUUtil, Unit: unitPercent, Type: typeInt64},
	{ID: fidFBTotal, Name: "DCGM_FI_DEV_FB_TOTAL", Col: colFBTotal, Unit: unitMiB, Type: typeInt64},
	{ID: fidFBUsed, Name: "DCGM_FI_DEV_FB_USED", Aliases: []string{"dcgm_fb_used"}, Col: colFBUsed, Unit: unitMiB, Type: typeInt64},
	{ID: fidPower, Name: "DCGM_FI_DEV_BOARD_POWER_WATTS", Aliases: []string{"DCGM_FI_DEV_POWER_USAGE", "dcgm_power_usage"}, Col: colPower, Unit: unitWatts, Type: typeDouble},
	{ID: fidEnergyMilliJ, Name: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Aliases: []string{"dcgm_total_energy_consumption"}, Col: colEnergy, Unit: unitMillijoules, Type: typeInt64},
	{ID: fidEnergyJoules, Name: "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", Col: colEnergy, Unit: unitJoules, Type: typeDouble, Optional: true},
	{ID: fidGPUTemp, Name: "DCGM_FI_DEV_GPU_TEMP_CELSIUS", Aliases: []string{"DCGM_FI_DEV_GPU_TEMP", "dcgm_gpu_temp"}, Col: colTemp, Unit: unitCelsius, Type: typeInt64},
	{ID: fidXID, Name: "DCGM_FI_DEV_XID_ERROR", Aliases: []string{"DCGM_FI_DEV_XID_ERRORS", "dcgm_xid_errors"}, Col: colXID, Unit: unitCode, Type: typeInt64},
	{ID: fidClockEvents, Name: "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", Aliases: []string{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"}, Col: colClockEventReasons, Unit: unitBitmask, Type: typeInt64},
	{ID: fidECCSBEVolatile, Name: "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", Aliases: []string{"dcgm_ecc_sbe_volatile_total"}, Col: colECCSBE, Unit: unitCount, Type: typeInt64},
	{ID: fidECCDBEVolatile, Name: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Aliases: []string{"dcgm_ecc_dbe_volatile_total"}, Col: colECCDBE, Unit: unitCount, Type: typeInt64},
	{ID: fidDriverVersion, Name: "DCGM_FI_DRIVER_VERSION", Type: typeString, Inventory: true},
	{ID: fidGPUName, Name: "DCGM_FI_DEV_GPU_NAME", Aliases: []string{"DCGM_FI_DEV_NAME"}, Type: typeString, Inventory: true},
	{ID: fidNVMLIndex, Name: "DCGM_FI_DEV_NVML_INDEX", Unit: unitIndex, Type: typeInt64, Inventory: true},
	{ID: fidGPUUUID, Name: "DCGM_FI_DEV_GPU_UUID", Aliases: []string{"DCGM_FI_DEV_UUID"}, Type: typeString, Inventory: true},
	{ID: fidMIGMaxSlices, Name: "DCGM_FI_DEV_MIG_MAX_SLICES", Unit: unitIndex, Type: typeInt64, Inventory: true},
}

// numSpecs is the number of known fields; a specSet holds one bit per field.
const numSpecs = len(fieldSpecs)

// A specSet must hold every spec.
const _ = uint(32 - numSpecs)

// specSet is a set of fieldSpecs indices.
type specSet uint32

func (s specSet) has(i int) bool { return s&(1<<i) != 0 }
func (s *specSet) add(i int)     { *s |= 1 << i }

// ids returns the field IDs in the set, in fieldSpecs order.
func (s specSet) ids() []uint16 {
	var ids []uint16
	for i := range numSpecs {
		if s.has(i) {
			ids = append(ids, fieldSpecs[i].ID)
		}
	}
	return ids
}

// setOf returns the set of the specs matching pred.
func setOf(pred func(fieldSpec) bool) specSet {
	var s specSet
	for i, f := range fieldSpecs {
		if pred(f) {
			s.add(i)
		}
	}
	return s
}

var (
	// specByID maps a DCGM field ID (all are below 2048) to its fieldSpecs index + 1.
	specByID [2048]int8
	// specByName maps every name and alias, upper-cased, to its fieldSpecs index.
	specByName = map[string]int{}
	// columnSpecs lists, per column, the fieldSpecs indices that fill it, preferred
	// first.
	columnSpecs [numColumns][]int

	profSpecs      = setOf(func(f fieldSpec) bool { return f.Prof })
	optionalSpecs  = setOf(func(f fieldSpec) bool { return f.Optional })
	inventorySpecs = setOf(func(f fieldSpec) bool { return f.Inventory })
	// migSpecs are the fields DCGM reports per MIG GPU instance; the rest of a MIG
	// row comes from its parent GPU.
	migSpecs = setOf(func(f fieldSpec) bool {
		return (f.Prof && f.Col != colPCIeTx && f.Col != colPCIeRx) || f.Col == colFBTotal || f.Col == colFBUsed
	})
)

func init() {
	for i, f := range fieldSpecs {
		specByID[f.ID] = int8(i + 1)
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			specByName[strings.ToUpper(n)] = i
		}
		if f.Col != colNone {
			columnSpecs[f.Col] = append(columnSpecs[f.Col], i)
		}
	}
}

// specIndex returns the fieldSpecs index of a DCGM field ID.
func specIndex(id uint16) (int, bool) {
	if int(id) >= len(specByID) || specByID[id] == 0 {
		return 0, false
	}
	return int(specByID[id]) - 1, true
}

// defaultFieldIDs are the fields watched when Config.Fields is empty. The
// deprecated PCIe throughput fields are added by themselves on GPUs without
// profiling, and DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL only when asked for (the
// millijoule counter exists in every DCGM).
var defaultFieldIDs = []uint16{
	fidProfGrEngine, fidProfSMActive, fidProfSMOccupancy, fidProfTensorActive, fidProfDRAMActive,
	fidProfPCIeTx, fidProfPCIeRx, fidGPUUtil, fidFBTotal, fidFBUsed, fidPower, fidEnergyMilliJ,
	fidGPUTemp, fidXID, fidClockEvents, fidECCSBEVolatile, fidECCDBEVolatile,
}

// Field is a DCGM field gpupool reads.
type Field struct {
	// ID is the DCGM field ID (DCGM_FI_PROF_SM_ACTIVE is 1002).
	ID uint16
	// Name is the name current DCGM headers give the field.
	Name string
	// Column is the trace format column it fills ("sm_active"); empty for fields
	// read only at start (GPU name, UUID).
	Column string
}

// DefaultFields returns the names of the fields watched when Config.Fields is empty.
func DefaultFields() []string {
	names := make([]string, len(defaultFieldIDs))
	for i, id := range defaultFieldIDs {
		j, _ := specIndex(id)
		names[i] = fieldSpecs[j].Name
	}
	return names
}

// ResolveField looks up a DCGM field by any of its names, old or new
// (DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_SM_UTIL_RATIO), by dcgm-exporter's
// lower-case metric name (dcgm_gpu_utilization), case-insensitively, or by its
// numeric ID ("1002"). It reports false for fields gpupool does not read.
func ResolveField(name string) (Field, bool) {
	name = strings.TrimSpace(name)
	i, ok := specByName[strings.ToUpper(name)]
	if !ok {
		id, err := strconv.ParseUint(name, 10, 16)
		if err != nil {
			return Field{}, false
		}
		if i, ok = specIndex(uint16(id)); !ok {
			return Field{}, false
		}
	}
	f := fieldSpecs[i]
	col := ""
	if f.Col != colNone {
		col = f.Col.String()
	}
	return Field{ID: f.ID, Name: f.Name, Column: col}, true
}

// ParseFieldsCSV reads a dcgm-exporter counters file ("DCGM_FI_PROF_SM_ACTIVE,
// gauge, help text" per line, '#' comments) and returns the fields gpupool reads, in
// file order without repeats, and the names it does not read (other counters, and
// dcgm-exporter's own DCGM_EXP_* metrics), so the caller can say what it ignores.
// A line whose first column is not a field name is an error.
func ParseFieldsCSV(r io.Reader) (fields []Field, skipped []string, err error) {
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		name, _, _ := strings.Cut(text, ",")
		name = strings.TrimSpace(name)
		if !validFieldName(name) {
			return nil, nil, fmt.Errorf("dcgm fields csv: line %d: %q is not a DCGM field name or ID", line, name)
		}
		f, ok := ResolveField(name)
		if !ok || f.Column == "" {
			skipped = append(skipped, name)
			continue
		}
		if !slices.ContainsFunc(fields, func(g Field) bool { return g.ID == f.ID }) {
			fields = append(fields, f)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("dcgm fields csv: line %d: %w", line+1, err)
	}
	return fields, skipped, nil
}

func validFieldName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// requestedSpecs resolves Config.Fields (nil: the defaults) to a specSet.
func requestedSpecs(names []string) (specSet, error) {
	var s specSet
	if len(names) == 0 {
		for _, id := range defaultFieldIDs {
			i, _ := specIndex(id)
			s.add(i)
		}
		return s, nil
	}
	var bad []string
	for _, n := range names {
		f, ok := ResolveField(n)
		if !ok || f.Column == "" {
			bad = append(bad, n)
			continue
		}
		i, _ := specIndex(f.ID)
		s.add(i)
	}
	if len(bad) > 0 {
		return 0, fmt.Errorf("fields: %s: not a DCGM field that fills a gpupool column (known: %s)",
			strings.Join(bad, ", "), strings.Join(knownColumnFieldNames(), ", "))
	}
	return s, nil
}

func knownColumnFieldNames() []string {
	var names []string
	for _, f := range fieldSpecs {
		if f.Col != colNone {
			names = append(names, f.Name)
		}
	}
	return names
}
