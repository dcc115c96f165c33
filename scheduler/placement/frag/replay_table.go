package frag

import (
	"fmt"
	"strings"
)

// Table is the replay as markdown: one row per policy and queue, side by side.
func (r ReplayResult) Table() string {
	var b strings.Builder
	b.WriteString("| policy | queue | GPU utilisation | wait p50 | wait p95 | wait max | stranded GPU-h | multi-GPU never started | of them arrived ≥ 1 h before the end | never started |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, run := range r.Runs {
		fmt.Fprintf(&b, "| %s | %s | %.1f %% | %s | %s | %s | %.0f | %d of %d | %d | %d of %d |\n",
			run.Policy, run.Queue, 100*run.Utilisation, duration(run.WaitP50), duration(run.WaitP95), duration(run.WaitMax),
			run.StrandedGPUHours, run.MultiNeverStarted, run.Multi, run.MultiNeverStartedOld, run.NeverStarted, len(r.Input.Jobs))
	}
	return b.String()
}

// Caption says what was replayed: the cluster, the jobs, the window and its
// compression, the offered load and the seed.
func (r ReplayResult) Caption(file string) string {
	in := r.Input
	multi := 0
	for _, j := range in.Jobs {
		if j.Shape.GPUs > 1 {
			multi++
		}
	}
	ignored := ""
	if r.GPUOnly {
		ignored = "; CPU and memory ignored"
	}
	return fmt.Sprintf("%s: %d nodes, %d GPUs (%.0f %% of the trace's nodes); %d tasks replayed (%d multi-GPU), %d without a usable time left out; "+
		"a window of %.1f days compressed %.1f× into %s; offered load %.2f; seed %d%s",
		file, r.Nodes, r.GPUs, 100*r.Share, len(in.Jobs), multi, in.Skipped, float64(in.End-in.Start)/86400, in.Compress,
		duration(in.Horizon), in.Load, r.Seed, ignored)
}

// duration is seconds in s, min or h, rounded for a table.
func duration(sec float64) string {
	switch {
	case sec < 60:
		return fmt.Sprintf("%.0f s", sec)
	case sec < 3600:
		return fmt.Sprintf("%.1f min", sec/60)
	}
	return fmt.Sprintf("%.1f h", sec/3600)
}
