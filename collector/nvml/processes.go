package nvml

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// utilSum accumulates one process's utilisation samples of one tick, in percent.
type utilSum struct {
	sm, mem uint64
	n       uint32
}

// nameEntry is a cached /proc/<pid>/comm, with the tick it was last needed.
type nameEntry struct {
	name string
	tick uint64
}

// listProcesses appends one row per process running on dev (a GPU or a MIG
// instance, named by uuid) to g.procs: the compute and graphics lists as
// configured, a process in both reported once with the larger memory figure.
func (g *gpuState) listProcesses(s *Source, dev device, uuid string, atMs int64) {
	clear(g.rowByPID)
	var st status
	if s.cfg.ComputeProcesses {
		g.compute, st = dev.ComputeRunningProcesses(g.compute)
		if g.ok(s, "ComputeRunningProcesses", st, uuid, fieldComputeProcesses) {
			g.addProcesses(s, g.compute, uuid, atMs)
		}
	}
	if s.cfg.GraphicsProcesses && !g.lostNow {
		g.graphics, st = dev.GraphicsRunningProcesses(g.graphics)
		if g.ok(s, "GraphicsRunningProcesses", st, uuid, fieldGraphicsProcesses) {
			g.addProcesses(s, g.graphics, uuid, atMs)
		}
	}
}

func (g *gpuState) addProcesses(s *Source, ps []processInfo, uuid string, atMs int64) {
	for _, p := range ps {
		if i, dup := g.rowByPID[p.PID]; dup {
			g.procs[i].FBUsedMiB = max(g.procs[i].FBUsedMiB, processMiB(p.UsedGPUMemory))
			continue
		}
		g.rowByPID[p.PID] = len(g.procs)
		g.procs = append(g.procs, processSample(atMs, uuid, p, g.processName(s, p.PID)))
	}
}

// fillProcessUtil sets SMUtil and MemUtil of this tick's process rows from the
// GPU's process utilisation samples newer than the last ones read (at most
// ProcessUtilWindow back): the mean of a process's samples. NVML lists only the
// processes that ran kernels since the timestamp, so once the call succeeds (or
// answers ERROR_NOT_FOUND: no process ran any) a process holding memory that is
// in no sample launched nothing and reads 0, not Missing. Missing stays for what
// the source cannot say: the call failed or is not supported — on a MIG-enabled
// GPU the samples come from the parent, which NVML usually answers with
// ERROR_NOT_SUPPORTED (docs/collector.md, "What the sources can tell").
func (g *gpuState) fillProcessUtil(s *Source, at time.Time) {
	if len(g.procs) == 0 || g.lostNow {
		return // nothing to fill: save the call
	}
	since := g.lastUtilMicros
	if floor := at.Add(-s.cfg.ProcessUtilWindow).UnixMicro(); floor > 0 && uint64(floor) > since {
		since = uint64(floor)
	}
	var st status
	g.utilSamples, st = g.dev.ProcessUtilization(g.utilSamples, since)
	clear(g.utilByPID)
	if st == errNotFound {
		g.utilSamples = g.utilSamples[:0] // no process ran kernels since: every one reads 0
	} else if !g.ok(s, "ProcessUtilization", st, g.uuid, fieldProcessUtil) {
		return // the source cannot say: the values stay Missing
	}
	for _, u := range g.utilSamples {
		if u.TimeStamp <= since {
			continue
		}
		sum := g.utilByPID[u.PID]
		sum.sm += uint64(u.SMUtil)
		sum.mem += uint64(u.MemUtil)
		sum.n++
		g.utilByPID[u.PID] = sum
		g.lastUtilMicros = max(g.lastUtilMicros, u.TimeStamp)
	}
	for i := range g.procs {
		g.procs[i].SMUtil, g.procs[i].MemUtil = 0, 0
		if sum, ok := g.utilByPID[g.procs[i].PID]; ok {
			g.procs[i].SMUtil = percentToRatio(float64(sum.sm) / float64(sum.n))
			g.procs[i].MemUtil = percentToRatio(float64(sum.mem) / float64(sum.n))
		}
	}
}

// processName is the process's /proc/<pid>/comm under ProcRoot, "" when it cannot
// be read (the process ended, or the collector sees another PID namespace). A name
// is read once and kept while the PID stays on this GPU.
func (g *gpuState) processName(s *Source, pid uint32) string {
	if e, ok := g.names[pid]; ok {
		e.tick = g.tick
		g.names[pid] = e
		return e.name
	}
	name := readComm(s.cfg.ProcRoot, pid)
	g.names[pid] = nameEntry{name: name, tick: g.tick}
	return name
}

// pruneNames forgets the names of PIDs not seen this tick, so that a reused PID
// is read afresh.
func (g *gpuState) pruneNames() {
	for pid, e := range g.names {
		if e.tick != g.tick {
			delete(g.names, pid)
		}
	}
}

func readComm(procRoot string, pid uint32) string {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "comm"))
	if err != nil {
		return ""
	}
	return string(bytes.TrimRight(b, "\n"))
}
