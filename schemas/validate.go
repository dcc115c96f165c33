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
	}
	if p := pb.Processes; p != nil {
		if err := checkTimes("process", p.TsDeltaMs, nowMs, maxSkewMs); err != nil {
			return err
		}
		if err := checkNonEmpty("process", "gpu_uuid", p.GpuUuid, pb.Dict); err != nil {
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
// not above memory total, times within maxSkewMs of nowMs. It names the first bad
// row and field.
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
