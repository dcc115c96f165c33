package nvml

import (
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// gpuState is what the source keeps about one physical GPU between ticks, and the
// rows one tick read from it. Within a tick only one goroutine touches it.
type gpuState struct {
	index int
	dev   device

	// Read once: they do not change while NVML is initialised.
	known      bool
	uuid       string
	name       string
	card       string
	totalBytes uint64

	// lost is whether the GPU answered ERROR_GPU_IS_LOST at the last tick; lostNow
	// at this one.
	lost, lostNow bool

	// xidGPU is the GPU's XID registration and the XID not yet carried (xid.go).
	xidGPU xidGPU

	// This tick's rows, appended to the batch in GPU order once every GPU is read.
	gpus  []schemas.GPUSample
	procs []schemas.ProcessSample

	// Reused between ticks (processes.go, mig.go).
	compute, graphics []processInfo
	utilSamples       []processUtilSample
	utilByPID         map[uint32]utilSum
	rowByPID          map[uint32]int
	names             map[uint32]nameEntry
	migs              map[string]migEntry
	lastUtilMicros    uint64
	tick              uint64

	// unsupported is, per GPU or MIG UUID, the fields already reported as
	// unsupported; warned the functions already logged as failing.
	unsupported map[string]fieldSet
	warned      map[string]bool
}

func newGPUState(index int) *gpuState {
	return &gpuState{
		index:       index,
		utilByPID:   make(map[uint32]utilSum),
		rowByPID:    make(map[uint32]int),
		names:       make(map[uint32]nameEntry),
		migs:        make(map[string]migEntry),
		unsupported: make(map[string]fieldSet),
		warned:      make(map[string]bool),
	}
}

// ok checks the result of one NVML call on this GPU (or one of its MIG instances,
// named by uuid). A lost GPU sets lostNow; an unsupported value is reported once
// per field in gpupool_nvml_field_unsupported; any other failure is counted and
// logged once per function.
func (g *gpuState) ok(s *Source, fn string, st status, uuid string, f field) bool {
	switch {
	case st == success:
		return true
	case st == errGPUIsLost:
		g.lostNow = true
		s.metrics.callErrors.WithLabelValues(fn, st.Error()).Inc()
	case st.unsupported() && f != fieldNone:
		if set := g.unsupported[uuid]; !set.has(f) {
			g.unsupported[uuid] = set | 1<<f
			s.metrics.unsupported.WithLabelValues(uuid, f.String()).Set(1)
			s.log.Debug("field not supported", "gpu_index", g.index, "gpu_uuid", uuid, "field", f.String(), "function", fn, "nvml", st.Error())
		}
	default:
		s.metrics.callErrors.WithLabelValues(fn, st.Error()).Inc()
		if !g.warned[fn] {
			g.warned[fn] = true
			s.log.Warn("NVML call failed", "function", fn, "gpu_index", g.index, "gpu_uuid", uuid, "nvml", st.Error())
		}
	}
	return false
}

// sample reads this GPU at one tick into g.gpus and g.procs (GPU rows only when
// wantGPUs). On a lost GPU it leaves both empty and sets lostNow.
func (g *gpuState) sample(s *Source, at time.Time, wantGPUs bool) {
	g.gpus, g.procs = g.gpus[:0], g.procs[:0]
	g.lostNow = false
	g.tick++
	g.read(s, at, wantGPUs)
	if g.lostNow {
		g.gpus, g.procs = g.gpus[:0], g.procs[:0]
		return
	}
	g.pruneNames()
	if wantGPUs { // only GPU rows look MIG profiles up
		g.pruneMIGs()
	}
}

func (g *gpuState) read(s *Source, at time.Time, wantGPUs bool) {
	if g.dev == nil {
		d, st := s.lib.DeviceByIndex(g.index)
		if !g.ok(s, "DeviceByIndex", st, g.uuid, fieldNone) {
			return
		}
		g.dev = d
	}
	if !g.known && !g.readStatic(s) {
		return
	}
	if s.cfg.MIG {
		mode, _, st := g.dev.MigMode()
		// MIG mode is a property, not a sample field: on a GPU without MIG it is
		// simply off.
		if st == errGPUIsLost {
			g.ok(s, "MigMode", st, g.uuid, fieldNone)
			return
		}
		if st == success && mode == migEnabled {
			g.readMIG(s, at, wantGPUs)
			return
		}
	}
	atMs := at.UnixMilli()
	if wantGPUs {
		r := g.readGPU(s)
		if g.lostNow {
			return
		}
		g.gpus = append(g.gpus, r.gpuSample(atMs))
	}
	g.listProcesses(s, g.dev, g.uuid, atMs)
	g.fillProcessUtil(s, at)
}

// readStatic reads what does not change: UUID, model, and memory size (for the
// card type and MIG profile names).
func (g *gpuState) readStatic(s *Source) bool {
	uuid, st := g.dev.UUID()
	if !g.ok(s, "UUID", st, "", fieldNone) {
		return false
	}
	name, st := g.dev.Name()
	if !g.ok(s, "Name", st, uuid, fieldNone) {
		return false
	}
	mem, st := g.dev.MemoryInfo()
	memOK := g.ok(s, "MemoryInfo", st, uuid, fieldFB)
	if g.lostNow {
		return false
	}
	// Without the memory size the card type is the family alone; try again next
	// tick.
	g.uuid, g.name, g.totalBytes = uuid, name, mem.Total
	g.card = schemas.CardType(name, bytesToMiB(mem.Total))
	g.known = memOK
	return true
}

// readGPU reads the whole GPU's values; each one NVML cannot give stays unread.
func (g *gpuState) readGPU(s *Source) reading {
	r := reading{uuid: g.uuid, model: g.name, card: g.card, index: uint32(g.index)}
	var st status
	r.mem, st = g.dev.MemoryInfo()
	r.memOK = g.ok(s, "MemoryInfo", st, g.uuid, fieldFB)
	r.util, st = g.dev.UtilizationRates()
	r.utilOK = g.ok(s, "UtilizationRates", st, g.uuid, fieldGPUUtil)
	r.powerMW, st = g.dev.PowerUsage()
	r.powerOK = g.ok(s, "PowerUsage", st, g.uuid, fieldPower)
	r.energyMilliJ, st = g.dev.TotalEnergyConsumption()
	r.energyOK = g.ok(s, "TotalEnergyConsumption", st, g.uuid, fieldEnergy)
	g.readShared(s, &r)
	if s.cfg.PCIe {
		r.pcieTxKBs, st = g.dev.PcieThroughput(pcieTx)
		r.pcieTxOK = g.ok(s, "PcieThroughput", st, g.uuid, fieldPCIeTx)
		r.pcieRxKBs, st = g.dev.PcieThroughput(pcieRx)
		r.pcieRxOK = g.ok(s, "PcieThroughput", st, g.uuid, fieldPCIeRx)
	}
	return r
}

// readShared reads the values of the physical GPU that also describe each of its
// MIG instances: the die's temperature, why its clocks are held back, and its
// memory's ECC error counts (an error may have hit any instance's memory).
func (g *gpuState) readShared(s *Source, r *reading) {
	var st status
	r.tempC, st = g.dev.Temperature()
	r.tempOK = g.ok(s, "Temperature", st, g.uuid, fieldTemp)
	r.clocks, st = g.dev.CurrentClocksEventReasons()
	r.clocksOK = g.ok(s, "CurrentClocksEventReasons", st, g.uuid, fieldClocks)
	r.eccUncorr, st = g.dev.TotalEccErrors(true)
	if r.eccOK = g.ok(s, "TotalEccErrors", st, g.uuid, fieldECC); r.eccOK {
		r.eccCorrected, st = g.dev.TotalEccErrors(false)
		r.eccOK = g.ok(s, "TotalEccErrors", st, g.uuid, fieldECC)
	}
}
