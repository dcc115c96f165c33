package frag

import (
	"fmt"
	"slices"
	"strings"
)

// Table is the result as markdown: one row per demand level, one column per
// policy with the share of GPU capacity left unallocated (mean over seeds, in
// %), and, when both fgd and gpupool ran, gpupool's difference from FGD in
// percentage points (negative: gpupool leaves fewer GPUs unallocated) and on how
// many seeds gpupool left fewer, as many, or more.
func (r Result) Table() string {
	var pols []string
	for _, c := range r.Curves {
		if !slices.Contains(pols, c.Policy) {
			pols = append(pols, c.Policy)
		}
	}
	both := slices.Contains(pols, FGD) && slices.Contains(pols, Gpupool)
	var b strings.Builder
	b.WriteString("| demand |")
	for _, p := range pols {
		fmt.Fprintf(&b, " %s |", p)
	}
	if both {
		b.WriteString(" gpupool − fgd (pp) | gpupool vs fgd, seeds (fewer/same/more) |")
	}
	b.WriteString("\n|---:|")
	b.WriteString(strings.Repeat("---:|", len(pols)))
	if both {
		b.WriteString("---:|---:|")
	}
	b.WriteString("\n")
	for li, l := range r.Levels {
		fmt.Fprintf(&b, "| %.0f %% |", 100*l)
		for _, p := range pols {
			fmt.Fprintf(&b, " %.2f |", 100*r.mean(p, li))
		}
		if both {
			fewer, same, more := r.versus(Gpupool, FGD, li)
			fmt.Fprintf(&b, " %+.2f | %d/%d/%d |", 100*(r.mean(Gpupool, li)-r.mean(FGD, li)), fewer, same, more)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Mean is a policy's unallocated share at level index li, averaged over seeds.
func (r Result) mean(policy string, li int) float64 {
	sum, n := 0.0, 0
	for _, c := range r.Curves {
		if c.Policy == policy {
			sum += c.Unallocated[li]
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// versus counts the seeds on which a left less, as much as, or more GPU
// capacity unallocated than b at level index li.
func (r Result) versus(a, b string, li int) (fewer, same, more int) {
	by := map[uint64]float64{}
	for _, c := range r.Curves {
		if c.Policy == b {
			by[c.Seed] = c.Unallocated[li]
		}
	}
	for _, c := range r.Curves {
		v, ok := by[c.Seed]
		if c.Policy != a || !ok {
			continue
		}
		switch d := c.Unallocated[li] - v; {
		case d < -1e-9:
			fewer++
		case d > 1e-9:
			more++
		default:
			same++
		}
	}
	return fewer, same, more
}
