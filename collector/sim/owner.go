package sim

// Owner is whose a job or leftover process is in the simulated fleet: the team
// and pool of the job that started it, as the fleet placed it. A stray process
// (nobody's) has neither.
type Owner struct {
	Team, Pool string
}

// JobOwner is the owner of the running or held job with key; false when the
// fleet has no such job.
func (f *Fleet) JobOwner(key string) (Owner, bool) {
	j := f.runningJobs[key]
	if j == nil {
		j = f.waiting[key]
	}
	if j == nil {
		return Owner{}, false
	}
	return Owner{Team: j.team, Pool: j.pool}, true
}

// ProcessOwner is the owner of the leftover process (a zombie or a stray) pid on
// node, the way an executor that kills it sees it; false when the node has no
// such leftover process.
func (f *Fleet) ProcessOwner(node string, pid uint32) (Owner, bool) {
	for _, n := range f.nodes {
		if n.name != node {
			continue
		}
		p, ok := n.leftover(pid)
		if !ok {
			return Owner{}, false
		}
		if p.owner == nil {
			return Owner{}, true
		}
		return Owner{Team: p.owner.team, Pool: p.owner.pool}, true
	}
	return Owner{}, false
}
