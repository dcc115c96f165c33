package schemas

import (
	"fmt"
	"math"
	"time"

	"github.com/gpupool/gpupool/schemas/wirepb"
)

// ValidateColumns is Validate for a batch read with DecodeColumns.
func ValidateColumns(pb *wirepb.SampleBatch, nowMs, maxSkewMs int64) error {
	if pb.Node == "" {
		return fmt.Errorf("%w: batch has no node", ErrInvalidValue)
	}
	if err := checkBatchIdents(pb.Cluster, pb.Node, pb.Dict); err != nil {
		return err
	}
	if g := pb.Gpus; g != nil {
		if err := checkTimes("gpu", g.TsDeltaMs, nowMs, maxSkewMs); err != nil {
			return err
		}
		if err := checkNonEmpty("gpu", "gpu_uuid", g.GpuUuid, pb.Dict); err != nil {
			return err
		}
		for _, c := range []struct {
			name string
			v    []float32
		}{
			{"gr_engine_active", g.GrEngineActive}, {"sm_active", g.SmActive}, {"sm_occupancy", g.SmOccupancy},
			{"tensor_active", g.TensorActive}, {"dram_active", g.DramActive}, {"gpu_util", g.GpuUtil},
		} {
			for i, v := range c.v {
				if err := checkRatio("gpu", i, c.name, v); err != nil {
					return err
				}
			}
		}
		for _, c := range []struct {
			b Bound
			v []float32
		}{{BoundPCIeTx, g.PcieTxBytesPerS}, {BoundPCIeRx, g.PcieRxBytesPerS}, {BoundPowerW, g.PowerW}, {BoundTempC, g.TempC}} {
			for i, v := range c.v {
				if err := checkBound("gpu", i, c.b, float64(v)); err != nil {
					return err
				}
			}
		}
		for i, v := range g.FbTotalMib {
			if err := checkBound("gpu", i, BoundFBTotalMiB, float64(v)); err != nil {
				return err
			}
		}
		if len(g.FbTotalMib) > 0 && len(g.FbUsedMib) > 0 {
			for i := range g.FbUsedMib {
				if err := checkMemory("gpu", i, g.FbUsedMib[i], g.FbTotalMib[i]); err != nil {
					return err
				}
			}
		}
		for i, v := range g.GpuIndex {
			if err := checkBound("gpu", i, BoundGPUIndex, float64(v)); err != nil {
				return err
			}
		}
		if err := checkEnergy(g, pb.Dict); err != nil {
			return err
		}
		checked := make([]uint8, len(pb.Dict))
		for _, c := range []struct {
			field string
			refs  []uint32
			class uint8
		}{
			{"gpu_uuid", g.GpuUuid, classKey}, {"model", g.Model, classText}, {"card", g.Card, classText},
			{"mig_profile", g.MigProfile, classText}, {"driver_version", g.DriverVersion, classText},
		} {
			if err := checkDictRefs("gpu", c.field, c.refs, pb.Dict, c.class, checked); err != nil {
				return err
			}
		}
	}
	if p := pb.Processes; p != nil {
		if err := checkTimes("process", p.TsDeltaMs, nowMs, maxSkewMs); err != nil {
			return err
		}
		if err := checkNonEmpty("process", "gpu_uuid", p.GpuUuid, pb.Dict); err != nil {
			return err
		}
		checked := make([]uint8, len(pb.Dict))
		for _, c := range []struct {
			field string
			refs  []uint32
			class uint8
		}{
			{"gpu_uuid", p.GpuUuid, classKey}, {"job", p.Job, classKey}, {"process_name", p.ProcessName, classText},
		} {
			if err := checkDictRefs("process", c.field, c.refs, pb.Dict, c.class, checked); err != nil {
				return err
			}
		}
		if err := checkProcessMemory(pb.Gpus, p, pb.Dict); err != nil {
			return err
		}
		for i, v := range p.SmUtil {
			if err := checkRatio("process", i, "sm_util", v); err != nil {
				return err
			}
		}
		for i, v := range p.MemUtil {
			if err := checkRatio("process", i, "mem_util", v); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkTimes(kind string, deltas []int64, nowMs, maxSkewMs int64) error {
	ts := int64(0)
	for i, d := range deltas {
		ts += d
		if err := checkTime(kind, i, ts, nowMs, maxSkewMs); err != nil {
			return err
		}
	}
	return nil
}

func checkNonEmpty(kind, name string, refs []uint32, dict []string) error {
	for i, r := range refs {
		if dict[r] == "" {
			return fmt.Errorf("%w: %s row %d has no %s", ErrInvalidValue, kind, i, name)
		}
	}
	return nil
}

func checkTime(kind string, i int, ts, nowMs, maxSkewMs int64) error {
	if ts <= 0 {
		return fmt.Errorf("%w: %s row %d: time %d ms is not after 1970", ErrInvalidValue, kind, i, ts)
	}
	if maxSkewMs > 0 && ts > nowMs+maxSkewMs {
		return fmt.Errorf("%w: %s row %d: timestamp too far in the future: %s is %s ahead of now, more than the %s allowed (ingest.max_future_skew)",
			ErrInvalidValue, kind, i, time.UnixMilli(ts).UTC().Format(time.RFC3339), time.Duration(ts-nowMs)*time.Millisecond,
			time.Duration(maxSkewMs)*time.Millisecond)
	}
	return nil
}

func checkMemory(kind string, i int, used, total uint32) error {
	if total > 0 && used > total {
		return fmt.Errorf("%w: %s row %d: fb_used_mib %d exceeds fb_total_mib %d", ErrInvalidValue, kind, i, used, total)
	}
	return nil
}

// Validate checks values a decoded batch carries: ratios within 0..1, memory used
// not above memory total, times within maxSkewMs of nowMs, the bounds of
// bounds.go. It names the first bad row and field. ValidateColumns, which ingest
// runs, checks more (energy steps, the processes' memory together, keys).
func Validate(b *SampleBatch, nowMs, maxSkewMs int64) error {
	if b.Node == "" {
		return fmt.Errorf("%w: batch has no node", ErrInvalidValue)
	}
	if err := checkBatchIdents(b.Cluster, b.Node, nil); err != nil {
		return err
	}
	for i := range b.GPUs {
		s := &b.GPUs[i]
		if err := checkTime("gpu", i, s.TimeMs, nowMs, maxSkewMs); err != nil {
			return err
		}
		if s.GPUUUID == "" {
			return fmt.Errorf("%w: gpu row %d has no gpu_uuid", ErrInvalidValue, i)
		}
		for _, r := range []struct {
			name string
			v    float32
		}{
			{"gr_engine_active", s.GrEngineActive}, {"sm_active", s.SMActive}, {"sm_occupancy", s.SMOccupancy},
			{"tensor_active", s.TensorActive}, {"dram_active", s.DRAMActive}, {"gpu_util", s.GPUUtil},
		} {
			if err := checkRatio("gpu", i, r.name, r.v); err != nil {
				return err
			}
		}
		for _, r := range []struct {
			b Bound
			v float32
		}{{BoundPCIeTx, s.PCIeTxBytesPerS}, {BoundPCIeRx, s.PCIeRxBytesPerS}, {BoundPowerW, s.PowerW}, {BoundTempC, s.TempC}} {
			if err := checkBound("gpu", i, r.b, float64(r.v)); err != nil {
				return err
			}
		}
		if err := checkBound("gpu", i, BoundFBTotalMiB, float64(s.FBTotalMiB)); err != nil {
			return err
		}
		if err := checkMemory("gpu", i, s.FBUsedMiB, s.FBTotalMiB); err != nil {
			return err
		}
		if err := checkBound("gpu", i, BoundGPUIndex, float64(s.GPUIndex)); err != nil {
			return err
		}
		if err := checkBound("gpu", i, BoundEnergyMilliJ, float64(s.EnergyMilliJ)); err != nil {
			return err
		}
		for _, t := range [...][2]string{{"model", s.Model}, {"card", s.Card}, {"mig_profile", s.MIGProfile}, {"driver_version", s.DriverVersion}} {
			if err := CheckText(t[0], t[1]); err != nil {
				return fmt.Errorf("%w: gpu row %d: %w", ErrInvalidValue, i, err)
			}
		}
	}
	totals := map[string]uint32{}
	for i := range b.GPUs {
		totals[b.GPUs[i].GPUUUID] = max(totals[b.GPUs[i].GPUUUID], b.GPUs[i].FBTotalMiB)
	}
	for i := range b.Processes {
		if r := ProcessMemoryReason(b.Processes[i].FBUsedMiB, totals[b.Processes[i].GPUUUID]); r != "" {
			return fmt.Errorf("%w: process row %d: %s", ErrInvalidValue, i, r)
		}
	}
	for i := range b.Processes {
		s := &b.Processes[i]
		if err := checkTime("process", i, s.TimeMs, nowMs, maxSkewMs); err != nil {
			return err
		}
		if s.GPUUUID == "" {
			return fmt.Errorf("%w: process row %d has no gpu_uuid", ErrInvalidValue, i)
		}
		if err := checkRatio("process", i, "sm_util", s.SMUtil); err != nil {
			return err
		}
		if err := checkRatio("process", i, "mem_util", s.MemUtil); err != nil {
			return err
		}
	}
	return nil
}

// ratioSlack tolerates rounding in sources that report percentages.
const ratioSlack = 1e-3

func checkRatio(kind string, i int, name string, v float32) error {
	if IsMissing(v) {
		return nil
	}
	if v < -ratioSlack || v > 1+ratioSlack || math.IsInf(float64(v), 0) {
		return fmt.Errorf("%w: %s row %d: %s = %v is outside 0..1", ErrInvalidValue, kind, i, name, v)
	}
	return nil
}

// maxDictString bounds one string of a batch's dictionary (GPU UUIDs, models,
// job keys, process names): longer than any identifier or text may be.
const maxDictString = 4096

// checkBatchIdents checks a batch's cluster (a name) and node (a key), and that
// no dictionary string is past maxDictString.
func checkBatchIdents(cluster, node string, dict []string) error {
	if err := CheckName("cluster", cluster); err != nil {
		return fmt.Errorf("%w: batch: %w", ErrInvalidValue, err)
	}
	if err := CheckKey("node", node); err != nil {
		return fmt.Errorf("%w: batch: %w", ErrInvalidValue, err)
	}
	for i, s := range dict {
		if len(s) > maxDictString {
			return fmt.Errorf("%w: batch: %w: dictionary string %d is %d bytes, longer than %d", ErrInvalidValue, ErrInvalidIdentifier, i, len(s), maxDictString)
		}
	}
	return nil
}

// Classes of dictionary strings: what a column's strings must be (ident.go).
const (
	classKey uint8 = 1 << iota
	classText
)

// checkDictRefs checks the dictionary strings a column refers to by the rules of
// their class (a key, or text), each string once per class (checked holds the
// classes each dictionary string passed), and names the first row whose string
// breaks them: the same rules the trace reader applies to the same fields.
func checkDictRefs(kind, field string, refs []uint32, dict []string, class uint8, checked []uint8) error {
	for i, r := range refs {
		if checked[r]&class != 0 {
			continue
		}
		var err error
		if class == classKey {
			err = CheckKey(field, dict[r])
		} else {
			err = CheckText(field, dict[r])
		}
		if err != nil {
			return fmt.Errorf("%w: %s row %d: %w", ErrInvalidValue, kind, i, err)
		}
		checked[r] |= class
	}
	return nil
}

// checkEnergy checks each GPU's energy counter against BoundEnergyMilliJ and,
// between the batch's successive samples of one GPU, against what
// BoundPowerW.Max can draw (EnergyStepReason).
func checkEnergy(g *wirepb.GPUColumns, dict []string) error {
	if len(g.EnergyMillij) == 0 {
		return nil
	}
	type last struct {
		mj uint64
		ms int64
	}
	prev := map[string]last{}
	ts := int64(0)
	for i, v := range g.EnergyMillij {
		ts += g.TsDeltaMs[i]
		if err := checkBound("gpu", i, BoundEnergyMilliJ, float64(v)); err != nil {
			return err
		}
		uuid := dict[g.GpuUuid[i]]
		if p, ok := prev[uuid]; ok {
			if r := EnergyStepReason(p.mj, p.ms, v, ts); r != "" {
				return fmt.Errorf("%w: gpu row %d (%s): %s", ErrInvalidValue, i, Clip(uuid), r)
			}
		}
		if v != 0 {
			prev[uuid] = last{v, ts}
		}
	}
	return nil
}

// checkProcessMemory checks each process's memory against its GPU's total where
// the batch holds a sample of that GPU (the largest total it gives), else against
// BoundProcessFBMiB; and the memory of the processes on one GPU at one time
// together against that GPU's total: one tenant cannot report the memory another
// holds.
func checkProcessMemory(g *wirepb.GPUColumns, p *wirepb.ProcessColumns, dict []string) error {
	if len(p.FbUsedMib) == 0 {
		return nil
	}
	totals := map[string]uint32{}
	if g != nil && len(g.FbTotalMib) > 0 {
		for i, r := range g.GpuUuid {
			totals[dict[r]] = max(totals[dict[r]], g.FbTotalMib[i])
		}
	}
	// total of each dictionary string a process row refers to (-1: not looked up).
	byRef := make([]int64, len(dict))
	for i := range byRef {
		byRef[i] = -1
	}
	type at struct {
		gpu uint32
		ms  int64
	}
	var sums map[at]uint64
	ts := int64(0)
	for i, used := range p.FbUsedMib {
		ts += p.TsDeltaMs[i]
		r := p.GpuUuid[i]
		if byRef[r] < 0 {
			byRef[r] = int64(totals[dict[r]])
		}
		total := uint32(byRef[r])
		if reason := ProcessMemoryReason(used, total); reason != "" {
			return fmt.Errorf("%w: process row %d (%s): %s", ErrInvalidValue, i, Clip(dict[r]), reason)
		}
		if total == 0 || used == 0 {
			continue
		}
		if sums == nil {
			sums = map[at]uint64{}
		}
		k := at{r, ts}
		sums[k] += uint64(used)
		if sums[k] > uint64(total) {
			return fmt.Errorf("%w: process row %d (%s): fb_used_mib: the processes on this GPU at %s hold %d MiB together, more than its fb_total_mib %d",
				ErrInvalidValue, i, Clip(dict[r]), time.UnixMilli(ts).UTC().Format(time.RFC3339Nano), sums[k], total)
		}
	}
	return nil
}

// CheckNotBefore refuses a batch holding a sample before minMs (the oldest time
// its store keeps; setting names where the limit is configured), naming the
// first such row. The error wraps ErrTooOld.
func CheckNotBefore(pb *wirepb.SampleBatch, minMs int64, setting string) error {
	for _, c := range []struct {
		kind   string
		deltas []int64
	}{{"gpu", pb.GetGpus().GetTsDeltaMs()}, {"process", pb.GetProcesses().GetTsDeltaMs()}} {
		ts := int64(0)
		for i, d := range c.deltas {
			ts += d
			if ts < minMs {
				return fmt.Errorf("%w: %s row %d: %s is before %s, the oldest sample the store keeps (%s): the raw table's TTL would delete it while its rollups kept it",
					ErrTooOld, c.kind, i, time.UnixMilli(ts).UTC().Format(time.RFC3339), time.UnixMilli(minMs).UTC().Format(time.RFC3339), setting)
			}
		}
	}
	return nil
}
