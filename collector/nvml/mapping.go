package nvml

import (
	"math"

	"github.com/gpupool/gpupool/schemas"
)

// reading is what one tick read from NVML for one GPU or MIG instance, in NVML's
// units, with an ok flag per value. gpuSample turns it into the trace format's
// units; a value not read stays schemas.Missing (or 0 for the integer counters).
type reading struct {
	uuid, model, card, migProfile string
	index                         uint32

	mem          memoryInfo
	util         utilization
	powerMW      uint32
	energyMilliJ uint64
	tempC        uint32
	pcieTxKBs    uint32
	pcieRxKBs    uint32
	clocks       uint64
	eccCorrected uint64
	eccUncorr    uint64

	memOK, utilOK, powerOK, energyOK, tempOK, pcieTxOK, pcieRxOK, clocksOK, eccOK bool
}

// gpuSample maps r to a GPUSample at atMs. The DCGM profiling ratios (SM active,
// tensor active, …) are not in NVML and stay Missing; GPUUtil carries NVML's
// utilization.gpu.
func (r *reading) gpuSample(atMs int64) schemas.GPUSample {
	s := schemas.NewGPUSample()
	s.TimeMs = atMs
	s.GPUUUID = r.uuid
	s.GPUIndex = r.index
	s.Model = r.model
	s.Card = r.card
	s.MIGProfile = r.migProfile
	if r.memOK {
		s.FBTotalMiB = bytesToMiB(r.mem.Total)
		s.FBUsedMiB = bytesToMiB(r.mem.Used)
	}
	if r.utilOK {
		s.GPUUtil = percentToRatio(float64(r.util.GPU))
	}
	if r.powerOK {
		s.PowerW = float32(r.powerMW) / 1000
	}
	if r.energyOK {
		s.EnergyMilliJ = r.energyMilliJ // NVML already counts millijoules
	}
	if r.tempOK {
		s.TempC = float32(r.tempC)
	}
	if r.pcieTxOK {
		s.PCIeTxBytesPerS = kbPerSToBytes(r.pcieTxKBs)
	}
	if r.pcieRxOK {
		s.PCIeRxBytesPerS = kbPerSToBytes(r.pcieRxKBs)
	}
	if r.clocksOK {
		s.ClockEventReasons = r.clocks
	}
	if r.eccOK {
		s.ECCCorrectedVolatile, s.ECCUncorrectedVolatile = r.eccCorrected, r.eccUncorr
	}
	return s
}

// processSample maps one NVML process entry to a ProcessSample at atMs; its SM
// and memory shares are filled in later from the process utilisation samples.
func processSample(atMs int64, gpuUUID string, p processInfo, name string) schemas.ProcessSample {
	return schemas.ProcessSample{
		TimeMs:      atMs,
		GPUUUID:     gpuUUID,
		PID:         p.PID,
		ProcessName: name,
		FBUsedMiB:   processMiB(p.UsedGPUMemory),
		SMUtil:      schemas.Missing,
		MemUtil:     schemas.Missing,
	}
}

// bytesToMiB converts bytes to whole MiB (rounded down, as nvidia-smi shows them),
// saturating at the largest uint32.
func bytesToMiB(b uint64) uint32 {
	mib := b >> 20
	if mib > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(mib)
}

// processMiB is bytesToMiB for a process's memory, which NVML reports as
// NVML_VALUE_NOT_AVAILABLE when it cannot tell; that becomes 0.
func processMiB(b uint64) uint32 {
	if b == valueNotAvailable {
		return 0
	}
	return bytesToMiB(b)
}

// percentToRatio converts NVML's percent to a 0..1 ratio, clamping the
// occasional value above 100 that per-process samples show.
func percentToRatio(p float64) float32 {
	return float32(min(max(p, 0), 100) / 100)
}

// kbPerSToBytes converts NVML's PCIe KB/s (KiB, as NVIDIA counts memory) to
// bytes per second.
func kbPerSToBytes(kb uint32) float32 { return float32(uint64(kb) * 1024) }

// migMemoryGB is the memory part of a MIG profile name ("10" in "1g.10gb"). NVIDIA
// names a profile by its share of the card's memory, rounded up to an eighth,
// times the card's size in whole GiB rounded up; go-nvlib derives it the same way.
// This is why a 9.5 GiB slice of an 80 GB card is "10gb", not "9gb".
func migMemoryGB(cardTotalBytes, sliceMB uint64) uint64 {
	if cardTotalBytes == 0 {
		return (sliceMB + 1023) / 1024
	}
	share := float64(sliceMB) * (1 << 20) / float64(cardTotalBytes)
	share = math.Ceil(share*8) / 8
	cardGB := (cardTotalBytes + 1<<30 - 1) >> 30
	return uint64(math.Round(share * float64(cardGB)))
}
