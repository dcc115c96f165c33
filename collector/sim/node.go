package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/schemas"
)

var _ collector.Source = (*Node)(nil)

// Clock-event reason bits as NVML reports them (nvmlClocksEventReason*).
const (
	clocksEventGPUIdle    = 0x1
	clocksEventSwPowerCap = 0x4
)

// Node is one simulated GPU server. It is a collector.Source: Sample reports its
// GPUs (or MIG instances) and GPU processes as they are at the fleet's current time.
type Node struct {
	name        string
	cluster     string
	c           *cluster
	index       int
	seed        uint64
	card        *cardSpec
	cardType    string
	mig         bool
	tickMs      int64
	utcOffsetMs int64
	// nextPID is the last PID handed out; PIDs grow like a Linux host's.
	nextPID uint32
	slots   []slot
	// sliced: some GPUs are time-sliced, each offered as two slots.
	sliced bool
	// downUntilMs: the node is lost until then (loss.go); Sample reports nothing.
	downUntilMs int64
}

// slot is one allocatable GPU unit: a whole GPU, or one MIG instance of one.
type slot struct {
	uuid       string
	gpuIndex   uint32
	migProfile string
	// migIndex is a MIG instance's place in its GPU's layout.
	migIndex   int
	fbTotalMiB uint32
	model      string
	driver     string
	card       string
	// tdpW and idleW are the slot's share of its GPU's power: a MIG instance
	// gets its compute slices' share, so a GPU's rows add up to the GPU.
	tdpW          float32
	idleW         float32
	pcieBytesPerS float32
	// tempOffsetC is how much warmer than its neighbours this GPU runs (airflow).
	tempOffsetC float32
	// primary is the index of the slot that reports this slot's physical unit:
	// its own, except for the second replica of a time-sliced GPU.
	primary int
	// sliced: a replica of a time-sliced GPU (it shares the GPU with the other).
	sliced bool
	// blind: the node's scheduler does not see processes left by ended jobs
	// (Kubernetes' device plugin counts pods, not processes), so it gives the GPU
	// to a new job while a zombie still holds memory on it.
	blind bool
	// opaque: the node's source reports no per-process activity for processes of
	// ended jobs (NVML accounting keeps none once the container is gone).
	opaque bool

	// Written by Advance only.
	job   *job
	procs []proc
	xid   uint32
	xidMs int64
	// down: its node is lost (loss.go); nothing is placed on it.
	down bool

	// Written by Sample only.
	energyMilliJ uint64
	lastMs       int64
	tempC        float32
}

// proc is one process holding memory on a slot.
type proc struct {
	pid  uint32
	name string
	// owner is the job that started the process; it stays set after the job
	// ends (a zombie still carries its job's key) and is nil for a stray process
	// nobody can attribute.
	owner  *job
	memMiB uint32
	// truth is the zombie truth record of a leftover process (see addTruth).
	truth int
}

// slotRef names one slot of one node.
type slotRef struct {
	n *Node
	i int
}

func (r slotRef) slot() *slot { return &r.n.slots[r.i] }

// free reports whether the scheduler may allocate the slot: no job and no process
// (the sim's scheduler sees leftover processes and keeps off those GPUs), except
// that a blind scheduler sees no process of an ended job.
func (s *slot) free() bool {
	if s.job != nil || s.down {
		return false
	}
	for _, p := range s.procs {
		if !s.blind || p.owner == nil || p.owner.state != stateEnded {
			return false
		}
	}
	return true
}

// shareMiB is the memory one tenant of the slot may fill: its GPU's, or half of
// it for a replica of a time-sliced GPU (time-slicing does not partition memory;
// tenants that overfill it run out of memory, which the sim leaves out).
func (s *slot) shareMiB() uint32 {
	if s.sliced {
		return s.fbTotalMiB / 2
	}
	return s.fbTotalMiB
}

// leftMiB is the memory the slot's processes leave free: a new job on a GPU a
// zombie still holds memory on gets what the zombie left (the memory it denies).
func (s *slot) leftMiB() uint32 {
	used := uint32(2)
	for _, p := range s.procs {
		used += p.memMiB
	}
	if used >= s.fbTotalMiB {
		return 0
	}
	return s.fbTotalMiB - used
}

// takes reports whether job j may be placed on the slot: free, and a replica of
// a time-sliced GPU only for one-GPU dev and inference jobs (time-slicing is
// offered to them; a multi-GPU job would get both replicas of one GPU).
func (s *slot) takes(j *job) bool {
	return s.free() && (!s.sliced || j.gpus == 1 && !j.memFull && (j.kind == kindNotebook || j.kind == kindOnline || j.kind == kindBatch))
}

// freeFor counts the slots of n that j may take.
func (n *Node) freeFor(j *job) int {
	k := 0
	for i := range n.slots {
		if n.slots[i].takes(j) {
			k++
		}
	}
	return k
}

func (n *Node) freeSlots() int {
	k := 0
	for i := range n.slots {
		if n.slots[i].free() {
			k++
		}
	}
	return k
}

// newNode builds node j of cluster c with the given type; index is its position in
// the fleet, which seeds its UUIDs and its sample noise.
func newNode(seed uint64, c *cluster, j, index, gpus int, typ nodeType, tickMs int64) *Node {
	n := &Node{
		name: nodeName(c.index, j), cluster: c.name, c: c, index: index, seed: seed,
		card: typ.card, cardType: schemas.CardType(typ.card.model, typ.card.fbMiB), mig: len(typ.mig) > 0,
		tickMs: tickMs, utcOffsetMs: c.utcOffsetMs,
		nextPID: 1000 + uint32(hash3(seed, uint64(index), 0x9d)%30000),
	}
	blind, opaque := c.real && c.source == schemas.SourceKubernetes, c.real && index%2 == 0
	// Half the GPUs of an inference node are time-sliced: two replicas each.
	slicedGPUs := 0
	if c.real && typ.card == &cardL40S && len(typ.mig) == 0 {
		slicedGPUs, n.sliced = gpus/2, true
	}
	driver := simDriver(seed, index)
	id := func(g, k int) string {
		h := hash3(seed, uint64(index), uint64(g)<<16|uint64(k))
		return formatUUID(h, mix64(h^0x5bd1e995), false)
	}
	for g := range gpus {
		tempOffset := float32(hash3(seed, uint64(index), uint64(g)|1<<40)%500) / 100
		energy := 1e9 + hash3(seed, uint64(index), uint64(g)|2<<40)%49e9
		if !n.mig {
			first := len(n.slots)
			for range 1 + boolInt(g < slicedGPUs) {
				n.slots = append(n.slots, slot{
					uuid: "GPU-" + id(g, 0), gpuIndex: uint32(g), fbTotalMiB: typ.card.fbMiB,
					model: typ.card.model, driver: driver, card: n.cardType, tdpW: typ.card.tdpW, idleW: typ.card.idleW,
					pcieBytesPerS: typ.card.pcieBytesPerS, energyMilliJ: energy, tempC: 30 + tempOffset, tempOffsetC: tempOffset,
					primary: first, sliced: g < slicedGPUs, blind: blind, opaque: opaque,
				})
			}
			continue
		}
		for k, m := range typ.mig {
			share := float32(m.slices) / 7
			n.slots = append(n.slots, slot{
				uuid: "MIG-" + id(g, k+1), gpuIndex: uint32(g), migProfile: m.profile, migIndex: k, fbTotalMiB: m.fbMiB,
				model: typ.card.model, driver: driver, card: n.cardType, tdpW: typ.card.tdpW * share, idleW: typ.card.idleW * share,
				pcieBytesPerS: typ.card.pcieBytesPerS * share, energyMilliJ: uint64(float32(energy) * share), tempC: 30 + tempOffset, tempOffsetC: tempOffset,
				primary: len(n.slots), blind: blind, opaque: opaque,
			})
		}
	}
	return n
}

// Cluster returns the name of the node's cluster.
func (n *Node) Cluster() string { return n.cluster }

// Name returns the node's host name.
func (n *Node) Name() string { return n.name }

// CardType returns the card type of the node's GPUs, e.g. "H100-80GB".
func (n *Node) CardType() string { return n.cardType }

// MIG reports whether the node's GPUs are split into MIG instances.
func (n *Node) MIG() bool { return n.mig }

// GPUUUIDs returns the UUIDs of the node's allocatable units (GPU-… or MIG-…) in
// the order Sample reports them.
func (n *Node) GPUUUIDs() []string {
	out := make([]string, 0, len(n.slots))
	for i := range n.slots {
		if n.slots[i].primary == i {
			out = append(out, n.slots[i].uuid)
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newPID returns a PID not in use on the node. PIDs increase by a small random
// step (other processes start in between) and wrap like Linux's pid_max.
func (n *Node) newPID(step uint32) uint32 {
	const pidMax = 4194304
	for {
		n.nextPID += 1 + step%400
		if n.nextPID >= pidMax {
			n.nextPID = 300
		}
		if !n.pidInUse(n.nextPID) {
			return n.nextPID
		}
		step = 0
	}
}

func (n *Node) pidInUse(pid uint32) bool {
	for i := range n.slots {
		for _, p := range n.slots[i].procs {
			if p.pid == pid {
				return true
			}
		}
	}
	return false
}

// Sample appends the node's GPU rows and process rows at time at, which must be the
// fleet's last Advance time. It may run concurrently with Sample of other nodes,
// never with Advance. Noise comes from a stream derived from the seed, the node
// and at, so the output does not depend on the order nodes are sampled in. The
// energy counter and temperature integrate from the previous sample of the node.
func (n *Node) Sample(ctx context.Context, at time.Time, b *schemas.SampleBatch) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sim: sample node %s: %w", n.name, err)
	}
	atMs := at.UnixMilli()
	if n.down(atMs) {
		return nil // lost: its collector is silent
	}
	nz := newNoise(hash3(n.seed, uint64(n.index), uint64(atMs)))
	for i := range n.slots {
		s := &n.slots[i]
		if s.primary != i {
			continue // a replica: sampled with its GPU's first slot
		}
		usedMiB := uint32(2) // the driver's own reservation
		var sum act
		hasContext := false
		k := i
		for ; k < len(n.slots) && n.slots[k].primary == i; k++ {
			a := n.slots[k].sampleProcs(n, atMs, &nz, &usedMiB, b)
			hasContext = hasContext || len(n.slots[k].procs) > 0
			if k == i {
				sum = a
			} else {
				sum = sum.plus(a) // time-slicing: the GPU's activity is its tenants' together
			}
		}
		b.GPUs = append(b.GPUs, s.sample(atMs, n.tickMs, &sum, min(usedMiB, s.fbTotalMiB), hasContext, &nz))
	}
	return nil
}

// sampleProcs returns the activity of the slot's job this tick and appends the
// slot's process rows, adding their memory to usedMiB.
func (s *slot) sampleProcs(n *Node, atMs int64, nz *noise, usedMiB *uint32, b *schemas.SampleBatch) act {
	running := s.job != nil && s.job.state == stateRunning
	var a act
	if running {
		a = s.job.activity(atMs, n.tickMs, n.utcOffsetMs, nz)
	} else {
		// A GPU without work still sees a trickle of driver and monitoring traffic.
		a.rxBytesPerS, a.txBytesPerS = nz.between(500, 3000), nz.between(500, 3000)
	}
	for k := range s.procs {
		p := &s.procs[k]
		ps := schemas.ProcessSample{TimeMs: atMs, GPUUUID: s.uuid, PID: p.pid, ProcessName: p.name, FBUsedMiB: p.memMiB}
		if p.owner != nil {
			ps.Job = p.owner.key
		}
		switch {
		case running && p.owner == s.job:
			ps.FBUsedMiB = uint32(float32(p.memMiB) * a.memScale)
			ps.SMUtil, ps.MemUtil = a.sm, a.dram
		case s.opaque && p.owner != nil:
			ps.SMUtil, ps.MemUtil = schemas.Missing, schemas.Missing
		}
		*usedMiB += ps.FBUsedMiB
		b.Processes = append(b.Processes, ps)
	}
	return a
}

// plus is two tenants' activity on one GPU in one tick.
func (a act) plus(o act) act {
	return act{
		gr: min(a.gr+o.gr, 0.995), sm: clamp01(a.sm + o.sm), occ: clamp01(a.occ + o.occ),
		tensor: clamp01(a.tensor + o.tensor), dram: clamp01(a.dram + o.dram),
		rxBytesPerS: a.rxBytesPerS + o.rxBytesPerS, txBytesPerS: a.txBytesPerS + o.txBytesPerS, memScale: 1,
	}
}

// sample turns one tick of activity into a GPU row and advances the slot's energy
// counter and temperature.
func (s *slot) sample(atMs, tickMs int64, a *act, usedMiB uint32, hasContext bool, nz *noise) schemas.GPUSample {
	// Power follows engine, SM and the busier of tensor and DRAM activity; a
	// CUDA context alone keeps the GPU in its highest performance state.
	frac := 0.45*a.gr + 0.35*a.sm + 0.2*max(a.tensor, a.dram)
	if hasContext {
		frac += 0.03
	}
	powerW := s.idleW + (s.tdpW-s.idleW)*min(frac*1.15, 1)*(1+0.02*nz.tri())
	powerW = min(powerW, s.tdpW)
	targetC := 28 + s.tempOffsetC + 52*powerW/s.tdpW
	if atMs > s.lastMs {
		if s.lastMs > 0 {
			dtMs := float32(atMs - s.lastMs)
			s.energyMilliJ += uint64(powerW*dtMs + 0.5) // W × ms = mJ
			s.tempC += (targetC - s.tempC) * dtMs / (dtMs + 60000)
		} else {
			s.tempC = targetC
		}
		s.lastMs = atMs
	}
	var util float32
	if a.gr > 0 {
		util = clamp01(a.gr*1.05 + 0.01)
	}
	var reasons uint64
	if a.gr == 0 {
		reasons |= clocksEventGPUIdle
	}
	if powerW > 0.95*s.tdpW {
		reasons |= clocksEventSwPowerCap
	}
	var xid uint32
	if s.xid != 0 && s.xidMs <= atMs && s.xidMs > atMs-tickMs {
		xid = s.xid
	}
	return schemas.GPUSample{
		TimeMs: atMs, GPUUUID: s.uuid, GPUIndex: s.gpuIndex, Model: s.model, DriverVersion: s.driver, Card: s.card,
		MIGProfile: s.migProfile, FBTotalMiB: s.fbTotalMiB, FBUsedMiB: usedMiB,
		GrEngineActive: a.gr, SMActive: a.sm, SMOccupancy: a.occ, TensorActive: a.tensor, DRAMActive: a.dram,
		GPUUtil:         util,
		PCIeTxBytesPerS: min(a.txBytesPerS, s.pcieBytesPerS), PCIeRxBytesPerS: min(a.rxBytesPerS, s.pcieBytesPerS),
		PowerW: powerW, EnergyMilliJ: s.energyMilliJ, TempC: s.tempC + nz.tri()*0.3, XID: xid,
		ClockEventReasons: reasons,
	}
}

// simDrivers are the NVIDIA driver versions the simulated fleet runs: most nodes
// the current production branch, about one in eight still on the previous one (an
// upgrade rolled out node by node), as real fleets are.
var simDrivers = [...]string{"570.86.15", "550.127.05"}

// simDriver is a node's driver version, a pure function of the seed and the node
// (no draw from the fleet's random stream, so a seed's fleet is unchanged).
func simDriver(seed uint64, index int) string {
	if hash3(seed, uint64(index), 0xd71e)%8 == 0 {
		return simDrivers[1]
	}
	return simDrivers[0]
}
