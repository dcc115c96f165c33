package schemas

import (
	"fmt"
	"math"
	"strings"
)

// CardType names a card for pricing and reports: the product family and its memory,
// e.g. "H100-80GB", "A100-40GB", "L40S-48GB". model is the driver's name
// ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"); fbTotalMiB is the whole card's
// memory (not a MIG slice's). A MIG instance has its parent's card type; its slice
// is in GPUSample.MIGProfile.
func CardType(model string, fbTotalMiB uint32) string {
	name := strings.TrimSpace(model)
	for _, prefix := range []string{"NVIDIA ", "Tesla ", "GeForce ", "Quadro "} {
		name = strings.TrimPrefix(name, prefix)
	}
	family := name
	if i := strings.IndexAny(name, " -_"); i > 0 {
		family = name[:i]
	}
	if family == "RTX" { // "RTX A6000", "RTX 4090"
		rest := strings.Fields(strings.TrimPrefix(name, "RTX"))
		if len(rest) > 0 {
			family = "RTX" + rest[0]
		}
	}
	if family == "" {
		family = "unknown"
	}
	if fbTotalMiB == 0 {
		return family
	}
	return fmt.Sprintf("%s-%dGB", family, memoryGB(fbTotalMiB))
}

// memoryGB rounds a card's usable memory (the driver reports a little less than the
// marketed size, e.g. 81559 MiB for an 80 GB H100) to the marketed size.
func memoryGB(mib uint32) int {
	gib := float64(mib) / 1024
	for _, size := range []int{4, 6, 8, 10, 11, 12, 16, 20, 24, 32, 40, 44, 48, 64, 80, 94, 96, 141, 144, 180, 192, 288} {
		if gib <= float64(size)*1.02 && gib >= float64(size)*0.9 {
			return size
		}
	}
	return int(math.Round(gib))
}
