package dcgm

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// ProcessLister lists the processes using the node's GPUs. DCGM has no call that
// lists a GPU's processes, so the caller supplies one: NVML's
// (nvmlDeviceGetComputeRunningProcesses), or one built from /proc.
type ProcessLister interface {
	// Processes returns one sample per process per GPU at time at. Fields the
	// lister does not know are zero or schemas.Missing.
	Processes(ctx context.Context, at time.Time) ([]schemas.ProcessSample, error)
}

// sampleProcesses appends the lister's processes, with DCGM's per-process SM and
// memory utilisation where DCGM has them (whole GPUs only: DCGM's process
// statistics are per physical GPU, so a MIG instance's process keeps the lister's
// values). A lister failure is logged and counted; the GPU rows still go out.
func (s *Source) sampleProcesses(ctx context.Context, at time.Time, b *schemas.SampleBatch) {
	procs, err := s.procs.Processes(ctx, at)
	if err != nil {
		s.m.errors.WithLabelValues("processes").Inc()
		s.log.Warn("list GPU processes failed", "err", err)
		return
	}
	clear(s.pidCache)
	for _, p := range procs {
		if p.TimeMs == 0 {
			p.TimeMs = at.UnixMilli()
		}
		if s.pidsOn {
			s.enrich(&p)
		}
		if p.ProcessName == "" {
			p.ProcessName = s.comm(p.PID)
		}
		b.Processes = append(b.Processes, p)
	}
}

// enrich fills the SM and memory shares the lister could not give (Missing: the
// source cannot say) with DCGM's, when DCGM has a valid value for the process on
// the process's GPU. A figure the lister gave is kept: NVML's is this tick's
// (0 when the process launched nothing since the last sample), while DCGM's
// process statistics aggregate the process's watched life, so a tenant that
// worked for an hour and then stopped would keep its busy figure under DCGM's.
// DCGM's valid 0 is "nothing ran"; a blank value or no statistics leave the
// lister's (docs/collector.md, "What the sources can tell").
func (s *Source) enrich(p *schemas.ProcessSample) {
	if !schemas.IsMissing(p.SMUtil) && !schemas.IsMissing(p.MemUtil) && p.ProcessName != "" {
		return // nothing DCGM would change
	}
	gpu, ok := s.wholeByUUID[p.GPUUUID]
	if !ok {
		return
	}
	stats, ok := s.pidCache[p.PID]
	if !ok {
		var err error
		if stats, err = s.eng.PIDInfo(p.PID); err != nil {
			// Usual for a process DCGM has not sampled yet.
			s.log.Debug("no DCGM statistics for process", "pid", p.PID, "err", err)
		}
		s.pidCache[p.PID] = stats
	}
	for _, st := range stats {
		if st.GPU != gpu {
			continue
		}
		if v, ok := percentToRatio(st.SMUtilPct); ok && schemas.IsMissing(p.SMUtil) {
			p.SMUtil = v
		}
		if v, ok := percentToRatio(st.MemUtilPct); ok && schemas.IsMissing(p.MemUtil) {
			p.MemUtil = v
		}
		if p.ProcessName == "" {
			p.ProcessName = st.Name
		}
	}
}

// percentToRatio converts DCGM's process percentages; blank values (2^47…) and
// anything outside 0..100 are not values.
func percentToRatio(v float64) (float32, bool) {
	if math.IsNaN(v) || v < 0 || v > 100 {
		return 0, false
	}
	return float32(v / 100), true
}

// comm reads a process's name from ProcRoot; empty when it is gone.
func (s *Source) comm(pid uint32) string {
	b, err := os.ReadFile(filepath.Join(s.cfg.ProcRoot, strconv.FormatUint(uint64(pid), 10), "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
