package sim

import (
	"fmt"
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
