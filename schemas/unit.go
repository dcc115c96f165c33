package schemas

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The GPU unit: the one definition every view, table and report counts GPUs by.
//
// A whole GPU is one GPU. A MIG instance is a slice of its GPU: it weighs its
// compute slices out of the card's (7; 4 on an A30), so a 1g.10gb slice of an
// H100 weighs 1/7 and a 7g.80gb slice 1. Whole GPUs and MIG slices are counted
// apart and shown side by side; their weights add up to GPU-equivalents, the
// unit GPU-hours and capacity are measured in. The SQL twin of GPUWeight is
// GPUWeightSQL, used by the chargeback core; a test in analyzer/chargeback
// compares them.

// MIGComputeSlices is the compute slices a card splits into under MIG: 4 on an
// A30, 7 on every other MIG-capable card.
func MIGComputeSlices(card string) int {
	if strings.HasPrefix(card, "A30") {
		return 4
	}
	return 7
}

// migSlicesRE finds a profile's compute slices: the first "<n>g.".
var migSlicesRE = regexp.MustCompile(`(\d+)g\.`)

// MIGProfileSlices is a MIG profile's compute slices ("3g.40gb" → 3,
// "1c.3g.40gb" → 3); a profile without "<n>g." (or with n over 255) counts 1,
// as GPUWeightSQL does.
func MIGProfileSlices(profile string) int {
	m := migSlicesRE.FindStringSubmatch(profile)
	if m == nil {
		return 1
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 || n > 255 {
		return 1
	}
	return n
}

// GPUWeight is the GPUs a unit counts as: 1 for a whole GPU (profile ""), its
// compute slices out of the card's for a MIG instance.
func GPUWeight(card, migProfile string) float64 {
	if migProfile == "" {
		return 1
	}
	return float64(MIGProfileSlices(migProfile)) / float64(MIGComputeSlices(card))
}

// GPUWeightSQL is GPUWeight in ClickHouse SQL over the columns (or expressions)
// card and migProfile.
func GPUWeightSQL(card, migProfile string) string {
	return fmt.Sprintf(`if(%[2]s = '', 1., greatest(toUInt8OrZero(extract(%[2]s, '(\\d+)g\\.')), 1) / if(startsWith(%[1]s, 'A30'), 4., 7.))`, card, migProfile)
}

// RequestedGPUsSQL is, in ClickHouse SQL, the GPUs a job asked for as GPU
// equivalents: gpus for a job of whole GPUs; for a job of MIG instances (its
// events carry mig_profile, mig_instances and gpus 0), the instances weighed
// by GPUWeight on card, so that a waiting instance is not priced as a GPU; for
// a fraction of one GPU (gpu_fraction thousandths, gpus 0), its share.
func RequestedGPUsSQL(gpus, card, migProfile, migInstances, gpuFraction string) string {
	return fmt.Sprintf("if(%[5]s > 0, %[5]s / 1000., if(%[2]s = '', toFloat64(%[1]s), toFloat64(%[3]s) * %[4]s))", gpus, migProfile, migInstances, GPUWeightSQL(card, migProfile), gpuFraction)
}

// Units counts a set of GPU units: whole GPUs, and MIG instances by profile.
// The zero value is empty.
type Units struct {
	// Whole is the whole GPUs.
	Whole int `json:"whole_gpus"`
	// MIG is the MIG instances per profile.
	MIG map[string]int `json:"mig_slices,omitempty"`
	// GPUEquivalents is the units' weight (GPUWeight) summed: whole GPUs plus
	// MIG slices as fractions of their GPU.
	GPUEquivalents float64 `json:"gpu_equivalents"`
}

// Add counts one unit of card with migProfile ("" for a whole GPU).
func (u *Units) Add(card, migProfile string) {
	if migProfile == "" {
		u.Whole++
	} else {
		if u.MIG == nil {
			u.MIG = map[string]int{}
		}
		u.MIG[migProfile]++
	}
	u.GPUEquivalents += GPUWeight(card, migProfile)
}

// Slices is the MIG instances of every profile.
func (u Units) Slices() int {
	n := 0
	for _, c := range u.MIG {
		n += c
	}
	return n
}

// String shows whole GPUs and MIG slices side by side, never summed as if a
// slice were a GPU: "8 GPUs", "16 MIG (8×1g.5gb, 8×3g.20gb) = 4.6 GPU-eq",
// "8 GPUs + 4 MIG (4×1g.10gb) = 8.6 GPU-eq".
func (u Units) String() string {
	if len(u.MIG) == 0 {
		return gpus(u.Whole)
	}
	profiles := make([]string, 0, len(u.MIG))
	for p := range u.MIG {
		profiles = append(profiles, p)
	}
	sort.Slice(profiles, func(i, j int) bool {
		si, sj := MIGProfileSlices(profiles[i]), MIGProfileSlices(profiles[j])
		if si != sj {
			return si < sj
		}
		return profiles[i] < profiles[j]
	})
	parts := make([]string, len(profiles))
	for i, p := range profiles {
		parts[i] = fmt.Sprintf("%d×%s", u.MIG[p], p)
	}
	mig := fmt.Sprintf("%d MIG (%s)", u.Slices(), strings.Join(parts, ", "))
	if u.Whole > 0 {
		mig = gpus(u.Whole) + " + " + mig
	}
	return fmt.Sprintf("%s = %.1f GPU-eq", mig, u.GPUEquivalents)
}

func gpus(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}
