package findings

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpupool/gpupool/schemas"
)

// findingID hashes the parts that identify a problem.
func findingID(kind schemas.FindingKind, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(kind))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:10])
}

// clone returns a copy of f that shares nothing mutable with it.
func clone(f *schemas.Finding) schemas.Finding {
	c := *f
	c.GPUUUIDs = slices.Clone(f.GPUUUIDs)
	c.Evidence = maps.Clone(f.Evidence)
	c.Labels = maps.Clone(f.Labels)
	return c
}

// unitWeight is the share of a GPU one unit is: 1 for a whole GPU, compute slices
// / 7 for a MIG instance ("3g.40gb" → 3/7), 1 when the profile cannot be read.
func unitWeight(migProfile string) float64 {
	if migProfile == "" {
		return 1
	}
	n, err := strconv.Atoi(strings.SplitN(migProfile, "g", 2)[0])
	if err != nil || n < 1 || n > 7 {
		return 1
	}
	return float64(n) / 7
}

// round3 keeps evidence readable: three decimals for ratios, more is noise.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
