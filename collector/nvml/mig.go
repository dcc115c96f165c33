package nvml

import (
	"strconv"
	"time"
)

// migEntry caches a MIG instance's profile name by its UUID (a re-created instance
// has a new UUID), with the tick it was last seen.
type migEntry struct {
	profile string
	tick    uint64
}

// readMIG samples a MIG-enabled GPU: one GPU row per MIG instance (when wantGPUs)
// and its processes.
//
// A MIG instance has its own memory, UUID and processes. Utilisation per instance
// is usually ERROR_NOT_SUPPORTED (DCGM's profiling fields measure it). Power,
// energy and PCIe traffic belong to the whole card and are left Missing on the
// instances, so that summing instances does not count the card several times;
// temperature and clock event reasons describe the one die and are copied to each.
func (g *gpuState) readMIG(s *Source, at time.Time, wantGPUs bool) {
	atMs := at.UnixMilli()
	var shared reading
	if wantGPUs {
		g.readShared(s, &shared)
		if g.lostNow {
			return
		}
	}
	n, st := g.dev.MaxMigDeviceCount()
	if !g.ok(s, "MaxMigDeviceCount", st, g.uuid, fieldNone) {
		return
	}
	for i := range n {
		mig, st := g.dev.MigDeviceByIndex(i)
		if st == errNotFound {
			continue // an empty slot
		}
		if !g.ok(s, "MigDeviceByIndex", st, g.uuid, fieldNone) {
			if g.lostNow {
				return
			}
			continue
		}
		uuid, st := mig.UUID()
		if !g.ok(s, "UUID", st, g.uuid, fieldNone) {
			if g.lostNow {
				return
			}
			continue
		}
		if wantGPUs {
			r := g.readInstance(s, mig, uuid, &shared)
			if g.lostNow {
				return
			}
			g.gpus = append(g.gpus, r.gpuSample(atMs))
		}
		g.listProcesses(s, mig, uuid, atMs)
		if g.lostNow {
			return
		}
	}
	g.fillProcessUtil(s, at)
}

// readInstance reads one MIG instance's own values and copies the die's.
func (g *gpuState) readInstance(s *Source, mig device, uuid string, shared *reading) reading {
	r := reading{
		uuid: uuid, model: g.name, card: g.card, index: uint32(g.index),
		tempC: shared.tempC, tempOK: shared.tempOK,
		clocks: shared.clocks, clocksOK: shared.clocksOK,
		eccCorrected: shared.eccCorrected, eccUncorr: shared.eccUncorr, eccOK: shared.eccOK,
	}
	r.migProfile = g.migProfile(s, mig, uuid)
	var st status
	r.mem, st = mig.MemoryInfo()
	r.memOK = g.ok(s, "MemoryInfo", st, uuid, fieldFB)
	r.util, st = mig.UtilizationRates()
	r.utilOK = g.ok(s, "UtilizationRates", st, uuid, fieldGPUUtil)
	return r
}

// migProfile names the instance's profile, reading its attributes the first time
// the UUID is seen.
func (g *gpuState) migProfile(s *Source, mig device, uuid string) string {
	if e, ok := g.migs[uuid]; ok {
		e.tick = g.tick
		g.migs[uuid] = e
		return e.profile
	}
	a, st := mig.Attributes()
	if !g.ok(s, "Attributes", st, uuid, fieldMIGProfile) {
		return "" // not cached: try again next tick
	}
	p := migProfileName(a, g.totalBytes)
	g.migs[uuid] = migEntry{profile: p, tick: g.tick}
	return p
}

// pruneMIGs forgets instances not seen this tick (destroyed or re-created).
func (g *gpuState) pruneMIGs() {
	for uuid, e := range g.migs {
		if e.tick != g.tick {
			delete(g.migs, uuid)
		}
	}
}

// migProfileName is NVIDIA's name for a MIG instance's profile: "<g>g.<mem>gb",
// or "<c>c.<g>g.<mem>gb" when the compute instance uses fewer slices than its GPU
// instance, e.g. "1g.10gb", "3g.40gb", "1c.3g.40gb". cardTotalBytes is the whole
// card's memory.
func migProfileName(a attributes, cardTotalBytes uint64) string {
	if a.GPUInstanceSliceCount == 0 {
		return ""
	}
	b := make([]byte, 0, 16)
	if c := a.ComputeInstanceSliceCount; c != 0 && c < a.GPUInstanceSliceCount {
		b = strconv.AppendUint(b, uint64(c), 10)
		b = append(b, "c."...)
	}
	b = strconv.AppendUint(b, uint64(a.GPUInstanceSliceCount), 10)
	b = append(b, "g."...)
	b = strconv.AppendUint(b, migMemoryGB(cardTotalBytes, a.MemorySizeMB), 10)
	b = append(b, "gb"...)
	return string(b)
}
