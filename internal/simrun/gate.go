package simrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"

	fleetsim "github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/schemas"
)

// Gate puts gpupool's scheduler in front of the simulated fleet, as Kueue stands
// in front of kube-scheduler: every job the fleet's clusters would queue waits,
// suspended, until the scheduler admits it by quota, priority and fair share
// (a job on MIG asks for one instance of its profile, a MIG resource); then
// the sim executor resumes it and the fleet places it (picks its nodes) or,
// with a model that lists nodes, runs it where the scheduler placed it.
// The fleet tells the gate of arrivals and ends from inside Advance; Flush hands
// them to the scheduler after it. Its own jobs' reruns and requeues come back
// as new arrivals, so a stop ends the scheduler's job (Job.Resubmits).
type Gate struct {
	log      *slog.Logger
	arrivals []fleetsim.Arrival
	ends     []gateEnd
	// Refused counts arrivals the scheduler refused (an unknown queue, a job
	// that can never fit its quota); the fleet runs them unadmitted, and each
	// is logged.
	Refused int
	// TimeLimits gives each job a time limit as users set them: twice its
	// planned run, rounded up to 15 minutes (what reservations are computed
	// from, with a model that lists nodes). A job running past it is stopped.
	TimeLimits bool
	// outside is what the fleet said holds slots outside the scheduler since
	// the last Flush; Conflicts counts those the scheduler had given to a job
	// of its own (the two pictures differed), each logged.
	outside   []outsideChange
	Conflicts int
}

type gateEnd struct{ key, status string }

type outsideChange struct {
	node, holder string
	// gpu, and index in its MIG layout (-1: a GPU given whole).
	gpu, index int
	held       bool
}

var _ fleetsim.OutsideGate = (*Gate)(nil)

// Outside implements fleetsim.OutsideGate.
func (g *Gate) Outside(node string, gpu int, holder string, held bool) {
	g.outside = append(g.outside, outsideChange{node, holder, gpu, -1, held})
}

// OutsideMIG implements fleetsim.OutsideGate.
func (g *Gate) OutsideMIG(node string, gpu, index int, holder string, held bool) {
	g.outside = append(g.outside, outsideChange{node, holder, gpu, index, held})
}

// NewGate returns a gate; set it on the fleet with Fleet.SetGate.
func NewGate(log *slog.Logger) *Gate {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Gate{log: log}
}

// Submitted implements fleetsim.Gate.
func (g *Gate) Submitted(a fleetsim.Arrival) { g.arrivals = append(g.arrivals, a) }

// Ended implements fleetsim.Gate.
func (g *Gate) Ended(key, status string) { g.ends = append(g.ends, gateEnd{key, status}) }

// Pending reports whether arrivals or ends wait for Flush.
func (g *Gate) Pending() bool { return len(g.arrivals)+len(g.ends)+len(g.outside) > 0 }

// Flush hands what the fleet reported since the last Flush to svc: ends first
// (their GPUs are free), then arrivals in the order they came. A refused arrival
// is let into the fleet unadmitted (admit, the fleet's Admit) so that it is not
// held for ever. Call it outside Advance, holding whatever lock the fleet needs.
func (g *Gate) Flush(ctx context.Context, svc *scheduler.Service, admit func(key string) error) error {
	var errs []error
	for _, e := range g.ends {
		if _, err := svc.FinishExternal(ctx, e.key, e.status); err != nil &&
			!errors.Is(err, scheduler.ErrUnknownJob) && !errors.Is(err, scheduler.ErrJobState) {
			errs = append(errs, fmt.Errorf("gate: end of %s: %w", e.key, err))
		}
	}
	g.ends = g.ends[:0]
	if svc.Placed() {
		for _, o := range g.outside {
			var err error
			if o.index < 0 {
				err = svc.HoldOutside(o.node, o.gpu, o.held)
			} else {
				err = svc.HoldOutsideMIG(o.node, o.gpu, o.index, o.held)
			}
			if err != nil {
				g.Conflicts++
				g.log.Error("the fleet holds a GPU the scheduler gave to a job", "node", o.node, "gpu", o.gpu, "mig_index", o.index, "holder", o.holder, "err", err)
			}
		}
	}
	g.outside = g.outside[:0]
	for _, a := range g.arrivals {
		t := executor.Target{Job: a.Key, Source: scheduler.SourceOfJob(a.Key), Cluster: a.Cluster}
		spec := ArrivalSpec(a)
		if g.TimeLimits && a.PlanS > 0 {
			const q = 15 * 60
			spec.TimeLimitS = (2*a.PlanS + q - 1) / q * q
		}
		if _, err := svc.SubmitSuspended(ctx, spec, t); err != nil {
			g.Refused++
			g.log.Warn("the scheduler refused a simulated job; the fleet runs it unadmitted", "job", a.Key, "queue", a.Pool, "err", err)
			if err := admit(a.Key); err != nil {
				errs = append(errs, fmt.Errorf("gate: let %s run: %w", a.Key, err))
			}
		}
	}
	g.arrivals = g.arrivals[:0]
	return errors.Join(errs...)
}

// ArrivalSpec is what a fleet job asks of the scheduler: its pool's queue, its
// team and project, its GPUs (or MIG instances of its profile), in its
// cluster, on the card it named (any card when it named none).
func ArrivalSpec(a fleetsim.Arrival) scheduler.JobSpec {
	spec := scheduler.JobSpec{
		Name: a.Key, Team: a.Team, Project: a.Project, Queue: a.Pool, GPUs: a.GPUs, Card: a.Card, MIGProfile: a.MIGProfile,
		Cluster: a.Cluster, Workload: a.Workload, ModelName: a.Model, Checkpointable: a.Workload == schemas.WorkloadTraining,
	}
	if a.Interactive {
		spec.Workload = schemas.WorkloadDev
	}
	if a.MIGProfile != "" {
		return spec // one instance: no shape
	}
	// The fleet's shapes (used when the model lists nodes): a job that fits a
	// node on one node, a larger one on whole nodes.
	switch n := a.NodeGPUs; {
	case n <= 0:
	case a.GPUs <= n:
		spec.GPUsPerNode = a.GPUs
	case a.GPUs%n == 0:
		spec.GPUsPerNode = n
	}
	return spec
}

// GateModel is the scheduler's model of a fleet with capacity caps: its card
// types, its clusters with their units per card (outside MIG) and MIG
// instances per MIG resource (<card>/<profile>), and the five pools as
// DefaultModel has them — one queue per pool, open to every team, all in one
// cohort — with each pool's nominal quota of a card its share of that card in
// DefaultModel, scaled to the fleet's units, and of a MIG resource its share
// of the resource's card, scaled to the fleet's instances. No pool bounds a
// job's run time: the fleet's jobs end on their own.
func GateModel(caps []fleetsim.ClusterCapacity) (scheduler.Model, error) {
	m := scheduler.DefaultModel()
	total := map[string]int{}
	m.Clusters = m.Clusters[:0]
	for _, c := range caps {
		capacity := maps.Clone(c.Cards)
		maps.Copy(capacity, c.MIG)
		m.Clusters = append(m.Clusters, scheduler.Cluster{Name: c.Name, Capacity: capacity})
		for card, n := range capacity {
			total[card] += n
		}
	}
	known := map[string]bool{}
	for _, c := range m.Cards {
		known[c.Name] = true
	}
	for _, key := range slices.Sorted(maps.Keys(total)) {
		if card, _, _ := strings.Cut(key, "/"); !known[card] {
			return scheduler.Model{}, fmt.Errorf("gate model: the fleet has card %s, which the default model does not rank", card)
		}
	}
	// share[pool][card]: each pool's share of a card in the default model
	// (of a MIG resource: of its card).
	pools := make([]map[string]int, len(m.Pools))
	for key, n := range total {
		card, _, _ := strings.Cut(key, "/")
		sum := 0
		for _, p := range m.Pools {
			sum += p.Capacity[card]
		}
		if sum == 0 {
			continue
		}
		// Largest remainders, so the pools' quotas add up to the fleet's units.
		type part struct {
			i    int
			frac float64
		}
		var parts []part
		left := n
		for i, p := range m.Pools {
			if pools[i] == nil {
				pools[i] = map[string]int{}
			}
			exact := float64(n) * float64(p.Capacity[card]) / float64(sum)
			pools[i][key] = int(math.Floor(exact))
			left -= pools[i][key]
			parts = append(parts, part{i, exact - math.Floor(exact)})
		}
		slices.SortStableFunc(parts, func(a, b part) int {
			switch {
			case a.frac > b.frac:
				return -1
			case a.frac < b.frac:
				return 1
			}
			return 0
		})
		for k := 0; k < left; k++ {
			pools[parts[k%len(parts)].i][key]++
		}
	}
	for i := range m.Pools {
		m.Pools[i].Capacity = pools[i]
		m.Pools[i].MaxJobDuration = 0
		for k := range m.Queues {
			if m.Queues[k].Pool != m.Pools[i].Name {
				continue
			}
			q := map[string]scheduler.Quota{}
			for card, n := range pools[i] {
				q[card] = scheduler.Quota{Nominal: n}
			}
			m.Queues[k].Quota = q
		}
	}
	// Online inference borrows here: the fleet's services are sized to its
	// cards, not to a quota.
	for i := range m.Pools {
		if m.Pools[i].Name == scheduler.PoolInferenceOnline {
			m.Pools[i].MayBorrow = true
		}
	}
	return m, nil
}

// PlacedGateModel is GateModel with the fleet's nodes in it (a MIG node with
// its GPUs' layouts): the scheduler admits a job onto concrete nodes and GPU
// slots or MIG instances, gangs whole, with a
// reservation for each job that does not fit and backfill around them (the
// model's default, conservative backfill),
// and the fleet runs it there (PlacementOf, the fleet's SetPlacer).
func PlacedGateModel(caps []fleetsim.ClusterCapacity) (scheduler.Model, error) {
	m, err := GateModel(caps)
	if err != nil {
		return m, err
	}
	for i, c := range caps {
		cl := &m.Clusters[i]
		cl.Capacity = nil
		for _, n := range c.Nodes {
			cl.Nodes = append(cl.Nodes, scheduler.NodeGroup{Name: n.Name, Card: n.Card, GPUs: n.GPUs, MIG: n.MIG})
		}
	}
	return m, m.Validate()
}

// SyncReserved hands the GPUs and MIG instances svc's last pass reserved to the fleet
// (Fleet.SetReserved): its hand-started work keeps off them. Call it after
// each pass.
func SyncReserved(fleet *fleetsim.Fleet, svc *scheduler.Service) {
	if !svc.Placed() {
		return
	}
	var out []fleetsim.NodeGPUs
	for _, a := range svc.Reserved() {
		out = append(out, nodeGPUs(a))
	}
	fleet.SetReserved(out)
}

// nodeGPUs is a's GPUs and MIG instances as the fleet takes them.
func nodeGPUs(a placement.NodeAlloc) fleetsim.NodeGPUs {
	out := fleetsim.NodeGPUs{Node: a.Node, GPUs: a.GPUs}
	for _, s := range a.Slices {
		out.MIG = append(out.MIG, fleetsim.MIGSlot{GPU: s.GPU, Index: s.Index})
	}
	return out
}

// Placer is what the fleet's SetPlacer takes: the placement svc gave a job.
func Placer(svc *scheduler.Service) func(key string) []fleetsim.NodeGPUs {
	return func(key string) []fleetsim.NodeGPUs {
		var out []fleetsim.NodeGPUs
		for _, a := range svc.PlacementOf(key) {
			out = append(out, nodeGPUs(a))
		}
		return out
	}
}
