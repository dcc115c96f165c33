package ingest

import (
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/wirepb"
)

// energyGPUs bounds the GPUs whose last energy counter ingest remembers: about
// 100 bytes each. A GPU forgotten (evicted with the older generation) is checked
// again from its next sample on.
const energyGPUs = 100_000

// energyLast is a GPU's latest energy counter reading.
type energyLast struct {
	ms int64
	mj uint64
}

// energyMemory keeps the latest energy counter of each GPU seen, so that the
// step rule (schemas.EnergyStepReason: a counter rises by at most 5 kW × the
// interval plus 1 s) holds across batches as ValidateColumns makes it hold within
// one: a counter that jumps in the next message, still under 2^53, is refused.
// It is bounded (two generations of at most limit/2 GPUs) and used by one
// pipeline's loop only.
type energyMemory struct {
	limit     int
	cur, prev map[string]energyLast
}

func newEnergyMemory(limit int) *energyMemory {
	return &energyMemory{limit: limit, cur: map[string]energyLast{}, prev: map[string]energyLast{}}
}

func (m *energyMemory) get(gpu string) (energyLast, bool) {
	if l, ok := m.cur[gpu]; ok {
		return l, true
	}
	l, ok := m.prev[gpu]
	return l, ok
}

func (m *energyMemory) put(gpu string, l energyLast) {
	if _, ok := m.cur[gpu]; !ok && len(m.cur) >= m.limit/2 {
		m.prev, m.cur = m.cur, make(map[string]energyLast, len(m.cur))
	}
	m.cur[gpu] = l
}

// energySeries names a GPU's counter: cluster, node and UUID.
func energySeries(cluster, node, uuid string) string { return cluster + "\x00" + node + "\x00" + uuid }

// check refuses a batch whose energy counters step impossibly from the last
// ones remembered for their GPUs; remember records a batch accepted.
func (m *energyMemory) check(pb *wirepb.SampleBatch) error {
	g := pb.Gpus
	if m == nil || g == nil || len(g.EnergyMillij) == 0 {
		return nil
	}
	ts := int64(0)
	for i, v := range g.EnergyMillij {
		ts += g.TsDeltaMs[i]
		if v == 0 {
			continue
		}
		uuid := pb.Dict[g.GpuUuid[i]]
		if l, ok := m.get(energySeries(pb.Cluster, pb.Node, uuid)); ok {
			if r := schemas.EnergyStepReason(l.mj, l.ms, v, ts); r != "" {
				return errInvalid("gpu row %d (%s): %s since the GPU's last sample in an earlier message (%d mJ at %d ms)", i, schemas.Clip(uuid), r, l.mj, l.ms)
			}
		}
	}
	return nil
}

func (m *energyMemory) remember(pb *wirepb.SampleBatch) {
	g := pb.Gpus
	if m == nil || g == nil || len(g.EnergyMillij) == 0 {
		return
	}
	ts := int64(0)
	for i, v := range g.EnergyMillij {
		ts += g.TsDeltaMs[i]
		if v == 0 {
			continue
		}
		key := energySeries(pb.Cluster, pb.Node, pb.Dict[g.GpuUuid[i]])
		// The latest reading by time is kept: a late sample does not move it back.
		if l, ok := m.get(key); !ok || ts >= l.ms {
			m.put(key, energyLast{ms: ts, mj: v})
		}
	}
}
