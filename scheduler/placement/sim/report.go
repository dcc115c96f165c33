package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Table renders results as a markdown table.
func Table(results []Result) string {
	var b strings.Builder
	b.WriteString("| strategy | jobs | utilisation | effective | p50 wait | p95 wait | max wait | max wait ≥8 GPUs | never started (≥8 GPUs) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %.1f%% | %.1f%% | %s | %s | %s | %s | %d (%d) |\n", r.Strategy, r.Jobs,
			100*r.Utilisation, 100*r.EffectiveUtilisation, hours(r.P50Wait), hours(r.P95Wait), hours(r.MaxWait),
			hours(r.MaxWaitLarge), r.NeverStarted, r.LargeNeverStarted)
	}
	return b.String()
}

// hours prints a wait compactly: "0", "12m", "3.4h".
func hours(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()+0.5))
	}
	return fmt.Sprintf("%.1fh", d.Hours())
}

// SizeTable renders each strategy's p95 wait per job size, and how many jobs
// of each size wait at least the strategy's overall p95: which jobs make the
// p95.
func SizeTable(results []Result, jobs []Job) string {
	var b strings.Builder
	b.WriteString("| strategy | p95 wait |")
	for _, s := range sizes {
		fmt.Fprintf(&b, " %d GPUs: p95 (≥ p95) |", s.gpus)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(sizes)) + "\n")
	for _, r := range results {
		by := map[int][]time.Duration{}
		at := map[int]int{}
		for i, w := range r.Waits {
			g := jobs[i].Request.GPUs
			by[g] = append(by[g], w)
			if w > 0 && w >= r.P95Wait {
				at[g]++
			}
		}
		fmt.Fprintf(&b, "| %s | %s |", r.Strategy, hours(r.P95Wait))
		for _, s := range sizes {
			ws := by[s.gpus]
			slices.Sort(ws)
			p := time.Duration(0)
			if len(ws) > 0 {
				p = ws[len(ws)*95/100]
			}
			fmt.Fprintf(&b, " %s (%d) |", hours(p), at[s.gpus])
		}
		b.WriteString("\n")
	}
	return b.String()
}
