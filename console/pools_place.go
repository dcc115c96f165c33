package console

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/placement"
)

// reservationRow is one reservation a waiting job holds: which nodes, from
// when. Hidden: another team's, shown as "reserved" with no job, queue or team.
type reservationRow struct {
	Job, Queue, Team string
	Hidden           bool
	GPUs             int
	Nodes            string
	From             time.Time
}

// waitingRow is one of the viewer's waiting jobs with its expected start
// (zero: no start can be promised yet) and why it waits.
type waitingRow struct {
	Job, Queue, Team, Why string
	GPUs                  int
	ExpectedStart         time.Time
	Reserved              bool
}

// placedModel reports whether the scheduler places jobs on nodes.
func placedModel(m scheduler.Model) bool {
	return slices.ContainsFunc(m.Clusters, func(c scheduler.Cluster) bool { return len(c.Nodes) > 0 })
}

// placementState reads the queued jobs: every reservation (another team's
// without its job, queue or team) and the viewer's own waiting jobs with their
// expected starts, each list sorted later by its table. A wait reason that
// names another team's job says "another team's job" instead.
func (c *Console) placementState(ctx context.Context, d *poolsData, v viewer) error {
	queued, err := c.sched.Jobs(ctx, scheduler.JobFilter{State: scheduler.StateQueued})
	if err != nil {
		return err
	}
	hidden := hiddenJobs(queued, v)
	for _, j := range queued {
		own := v.sees(j.Spec.Team)
		if len(j.Reserved) > 0 {
			r := reservationRow{Job: j.ID, Queue: j.Spec.Queue, Team: j.Spec.Team, GPUs: reservedGPUs(j.Reserved), Nodes: nodeList(j.Reserved), From: j.ExpectedStart}
			if !own {
				r = reservationRow{Hidden: true, GPUs: r.GPUs, Nodes: r.Nodes, From: r.From}
			}
			d.Reservations = append(d.Reservations, r)
		}
		if own {
			d.Waiting = append(d.Waiting, waitingRow{Job: j.ID, Queue: j.Spec.Queue, Team: j.Spec.Team, GPUs: j.Spec.GPUs,
				ExpectedStart: j.ExpectedStart, Reserved: len(j.Reserved) > 0, Why: scrubReason(j.WaitReason, hidden)})
		}
	}
	return c.fragmentation(ctx, d, v)
}

// hiddenJobs is the IDs of the jobs the viewer may not see, longest first (so
// that "sched/nlp/12" is replaced before "sched/nlp/1").
func hiddenJobs(jobs []scheduler.Job, v viewer) []string {
	var out []string
	for _, j := range jobs {
		if !v.sees(j.Spec.Team) {
			out = append(out, j.ID)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// scrubReason replaces the hidden jobs' IDs in a wait reason (a job behind
// another team's reservation, or behind its job under strict FIFO).
func scrubReason(why string, hidden []string) string {
	for _, id := range hidden {
		why = strings.ReplaceAll(why, id, "another team's job")
	}
	return why
}

func reservedGPUs(allocs []placement.NodeAlloc) int {
	n := 0
	for _, a := range allocs {
		n += len(a.GPUs) + len(a.Slices)
	}
	return n
}

func nodeList(allocs []placement.NodeAlloc) string {
	names := make([]string, len(allocs))
	for i, a := range allocs {
		names[i] = a.Node
	}
	return strings.Join(names, ", ")
}
