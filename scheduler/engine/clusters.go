package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// AnyCluster, alone in JobSpec.Clusters, is every cluster the job may use (as
// is naming none).
const AnyCluster = "any"

// resolveClusters sets the clusters j may run in: those it names (cluster,
// clusters, or any), less those whose boundaries refuse its team or whose
// labels lack its locality. j.allowed is nil when that is every cluster;
// j.excluded says why each cluster left out was. A job left with no cluster is
// refused: ErrNotAllowed when only team boundaries refuse it, else
// ErrInvalidJob, naming each cluster and its rule.
func (e *Engine) resolveClusters(j *Job) error {
	named, err := e.namedClusters(&j.Spec)
	if err != nil {
		return err
	}
	j.allowed, j.allowedNames, j.excluded = nil, nil, nil
	onlyTeams := true
	for _, ci := range named {
		if why, team := e.refuses(ci, &j.Spec); why != "" {
			j.excluded = append(j.excluded, why)
			onlyTeams = onlyTeams && team
			continue
		}
		j.allowed = append(j.allowed, ci)
		j.allowedNames = append(j.allowedNames, e.clusters[ci].name)
	}
	if len(j.allowed) == 0 && j.Running() && j.Cluster != "" {
		// A job running when the clusters' boundaries or labels changed (a
		// restart with a new model) keeps its cluster: it holds GPUs there,
		// and losing track of it would give them away twice.
		if ci, ok := e.clusterIdx[j.Cluster]; ok && slices.Contains(named, ci) {
			j.allowed, j.allowedNames = []int{ci}, []string{j.Cluster}
			return nil
		}
	}
	if len(j.allowed) == 0 {
		kind := ErrInvalidJob
		if onlyTeams {
			kind = ErrNotAllowed
		}
		return fmt.Errorf("%w: clusters: no cluster the job names may take it: %s", kind, strings.Join(j.excluded, "; "))
	}
	if len(j.allowed) == len(e.clusters) {
		j.allowed, j.allowedNames = nil, nil // every cluster: no restriction
	}
	return nil
}

// namedClusters is the clusters spec names, by index: cluster's, clusters', or
// (none, or "any") every one.
func (e *Engine) namedClusters(s *JobSpec) ([]int, error) {
	bad := func(format string, args ...any) ([]int, error) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidJob, fmt.Sprintf(format, args...))
	}
	names := s.Clusters
	switch {
	case s.Cluster != "" && len(s.Clusters) > 0:
		return bad("cluster %q and clusters %v: set one (cluster names one cluster, clusters several or %q)", s.Cluster, s.Clusters, AnyCluster)
	case s.Cluster != "":
		names = []string{s.Cluster}
	case len(names) == 1 && names[0] == AnyCluster:
		names = nil
	}
	if len(names) == 0 {
		all := make([]int, len(e.clusters))
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	var out []int
	for i, name := range names {
		ci, ok := e.clusterIdx[name]
		switch {
		case name == AnyCluster:
			return bad("clusters[%d]: %q stands alone (it means every cluster); name clusters or %q, not both", i, AnyCluster, AnyCluster)
		case !ok:
			field := fmt.Sprintf("clusters[%d]", i)
			if s.Cluster != "" {
				field = "cluster"
			}
			return bad("%s: cluster %q does not exist (clusters: %s, or %q)", field, name, strings.Join(e.clusterNames(), ", "), AnyCluster)
		case slices.Contains(out, ci):
			return bad("clusters[%d]: %q is listed twice", i, name)
		}
		out = append(out, ci)
	}
	return out, nil
}

// refuses says why cluster ci may not take a job of spec ("" if it may), and
// whether the rule is its team boundary.
func (e *Engine) refuses(ci int, s *JobSpec) (why string, team bool) {
	c := &e.model.Clusters[ci]
	if len(c.Teams) > 0 && !slices.Contains(c.Teams, s.Team) {
		return fmt.Sprintf("%s refuses team %s (open to %s)", c.Name, s.Team, strings.Join(c.Teams, ", ")), true
	}
	for _, k := range slices.Sorted(maps.Keys(s.Locality)) {
		if v, ok := c.Labels[k]; !ok || v != s.Locality[k] {
			return fmt.Sprintf("%s lacks locality %s=%s (its labels: %s)", c.Name, k, s.Locality[k], labelList(c.Labels)), false
		}
	}
	return "", false
}

func labelList(m map[string]string) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return strings.Join(out, ", ")
}

// mayUse reports whether j may run in cluster ci.
func (j *Job) mayUse(ci int) bool { return j.allowed == nil || slices.Contains(j.allowed, ci) }

// clustersOf is j's clusters in words: "any cluster" or their names.
func (e *Engine) clustersOf(j *Job) string {
	if j.allowed == nil {
		return "any cluster (" + strings.Join(e.clusterNames(), ", ") + ")"
	}
	return strings.Join(j.allowedNames, ", ")
}

// whyPlaced is the placement reason of j admitted in cluster c now.
func (e *Engine) whyPlaced(j *Job, c string) string {
	why := "placed in " + c + ": fits now"
	if e.choice(j) {
		why += " (the fullest with room of " + e.clustersOf(j) + ")"
	}
	return e.withExcluded(j, why)
}

// whyReserved is the placement reason of j reserved r.
func (e *Engine) whyReserved(j *Job, r *placement.Reservation) string {
	why := fmt.Sprintf("reserved in %s from %s: fits there soonest", r.Placement.Cluster, r.Start.UTC().Format("2006-01-02 15:04 UTC"))
	if e.choice(j) {
		why += " of " + e.clustersOf(j)
	}
	return e.withExcluded(j, why)
}

// choice reports whether j may run in more than one cluster.
func (e *Engine) choice(j *Job) bool { return len(e.clusters) > 1 && len(j.allowed) != 1 }

// whyWaiting is the placement reason of a queued job with no reservation:
// where it may run, when that is not simply anywhere.
func (e *Engine) whyWaiting(j *Job) string {
	if j.allowed == nil && len(j.excluded) == 0 {
		return ""
	}
	return e.withExcluded(j, "waiting; may run in "+e.clustersOf(j))
}

func (e *Engine) withExcluded(j *Job, why string) string {
	if len(j.excluded) > 0 {
		why += "; " + strings.Join(j.excluded, "; ")
	}
	return why
}

// reserveWhy keeps a queued job's placement reason in step with its
// reservation (the words, with times, change without a decision, as
// WaitReason's do).
func (e *Engine) reserveWhy(j *Job, r *placement.Reservation) {
	if r == nil {
		j.PlacementReason = e.whyWaiting(j)
		return
	}
	j.PlacementReason = e.whyReserved(j, r)
}
