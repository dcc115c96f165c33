package dcgm

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpupool/gpupool/schemas"
)

// MIG: on a GPU with MIG GPU instances every instance is a row (the unit jobs are
// given) and the physical GPU is not. DCGM's hierarchy gives each instance its
// parent, its compute slices and its NVML IDs, but no profile name and, in most
// releases, no MIG UUID; both are derived here.

// migUnits returns the rows of g's MIG GPU instances, in instance order; none when
// MIG is off or no instance exists. static holds the inventory readings of the
// instances (UUID, memory), possibly none.
func migUnits(g *gpuInfo, entries []migEntry, static map[entity]*readings) []unit {
	gpu := entity{entityGPU, g.ID}
	var gis []migEntry
	for _, e := range entries {
		if e.Entity.Kind == entityGPUInstance && e.Parent == gpu {
			gis = append(gis, e)
		}
	}
	slices.SortFunc(gis, func(a, b migEntry) int {
		return cmp.Or(cmp.Compare(a.NVMLInstanceID, b.NVMLInstanceID), cmp.Compare(a.Entity.ID, b.Entity.ID))
	})
	maxSlices := g.MaxSlices
	if maxSlices == 0 {
		maxSlices = defaultMaxSlices(g.Card)
	}
	var units []unit
	for _, gi := range gis {
		ci := uint32(0)
		for _, e := range entries {
			if e.Entity.Kind == entityComputeInstance && e.Parent == gi.Entity {
				ci = e.NVMLComputeInstanceID
				break
			}
		}
		var giMiB uint32
		uuid := ""
		if r := static[gi.Entity]; r != nil {
			if i, ok := specIndex(fidGPUUUID); ok && r.have.has(i) {
				if s, rd := text(r.vals[i]); rd == readingOK && strings.HasPrefix(s, "MIG-") {
					uuid = s
				}
			}
			if i, ok := specIndex(fidFBTotal); ok && r.have.has(i) {
				if n, rd := number(r.vals[i], &fieldSpecs[i]); rd == readingOK {
					giMiB = uint32(min(n, math.MaxUint32))
				}
			}
		}
		if uuid == "" {
			uuid = legacyMIGUUID(g.UUID, gi.NVMLInstanceID, ci)
		}
		sl := gi.Slices
		if sl == 0 || sl > maxSlices {
			sl = 1
		}
		units = append(units, unit{
			UUID:       uuid,
			Index:      g.Index,
			Model:      g.Model,
			Card:       g.Card,
			Driver:     g.Driver,
			MIGProfile: migProfileName(sl, maxSlices, giMiB, g.FBTotalMiB, g.Card),
			FBTotalMiB: giMiB,
			Self:       gi.Entity,
			GPU:        g.ID,
			MIG:        true,
			Share:      float64(sl) / float64(maxSlices),
		})
	}
	return units
}

// legacyMIGUUID names a MIG instance when DCGM gives no MIG UUID, in the form CUDA
// and NVML used before driver R470 ("MIG-GPU-<uuid>/<gi>/<ci>"), which CUDA still
// accepts in CUDA_VISIBLE_DEVICES. It is stable while the instance exists.
func legacyMIGUUID(parent string, gi, ci uint32) string {
	return fmt.Sprintf("MIG-%s/%d/%d", parent, gi, ci)
}

// defaultMaxSlices is the number of compute slices of a MIG-capable card when DCGM
// does not report DCGM_FI_DEV_MIG_MAX_SLICES: 4 on the A30, 7 elsewhere.
func defaultMaxSlices(card string) uint32 {
	if strings.HasPrefix(card, "A30-") {
		return 4
	}
	return 7
}

// memorySlices returns the memory slices of a card with maxSlices compute slices:
// 7-slice cards (A100, H100, H200, B200) split memory in 8, 4-slice cards (A30) in 4.
func memorySlices(maxSlices uint32) uint32 {
	if maxSlices == 7 {
		return 8
	}
	return maxSlices
}

// migProfileName names a GPU instance as nvidia-smi does ("1g.10gb", "3g.40gb"):
// compute slices, and the instance's memory in marketed GB. The memory share is
// measured (instance MiB over card MiB, rounded to whole memory slices) when both
// are known, and otherwise taken from the usual layout (1g→1/8, 2g→2/8, 3g and 4g→4/8,
// 7g→8/8). Media-extension profiles ("+me") are named without the suffix.
func migProfileName(computeSlices, maxSlices, instanceMiB, cardMiB uint32, card string) string {
	total := memorySlices(maxSlices)
	var mem float64
	if instanceMiB > 0 && cardMiB > 0 && instanceMiB <= cardMiB {
		mem = math.Round(float64(instanceMiB) / float64(cardMiB) * float64(total))
	} else {
		switch {
		case total == 8 && (computeSlices == 3 || computeSlices == 4):
			mem = 4
		case total == 8 && computeSlices >= 7:
			mem = 8
		default:
			mem = float64(computeSlices)
		}
	}
	mem = max(1, min(mem, float64(total)))
	gb := math.Floor(float64(cardGB(card, cardMiB))*mem/float64(total) + 0.5)
	return fmt.Sprintf("%dg.%dgb", computeSlices, int(gb))
}

// cardGB is a card's marketed memory: the "80" of "A100-80GB".
func cardGB(card string, cardMiB uint32) int {
	if i := strings.LastIndexByte(card, '-'); i >= 0 {
		if n, err := strconv.Atoi(strings.TrimSuffix(card[i+1:], "GB")); err == nil && n > 0 {
			return n
		}
	}
	return int(math.Round(float64(cardMiB) / 1024))
}

// wholeGPUUnit is the row of a GPU without MIG instances.
func wholeGPUUnit(g *gpuInfo) unit {
	return unit{
		UUID: g.UUID, Index: g.Index, Model: g.Model, Card: g.Card, Driver: g.Driver, FBTotalMiB: g.FBTotalMiB,
		Self: entity{entityGPU, g.ID}, GPU: g.ID, Share: 1,
	}
}

// cardOf is the card type of a GPU (and of its MIG instances).
func cardOf(model string, fbTotalMiB uint32) string { return schemas.CardType(model, fbTotalMiB) }
