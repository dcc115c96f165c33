package engine

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// clustersModel is three clusters of 8 H100 each: us-a (region us), eu-b
// (region eu) and eu-c (region eu, nlp's alone); queues vision and nlp share
// cohort t. nodes: the clusters list one node each (else GPUs are counted).
func clustersModel(nodes bool) Model {
	m := Model{
		Cards: []Card{{Name: "H100-80GB", MemoryGiB: 80, Rank: 4}},
		Clusters: []Cluster{
			{Name: "us-a", Labels: map[string]string{"region": "us"}},
			{Name: "eu-b", Labels: map[string]string{"region": "eu"}},
			{Name: "eu-c", Labels: map[string]string{"region": "eu"}, Teams: []string{"nlp"}},
		},
		Pools: []Pool{{Name: "train", Capacity: map[string]int{"H100-80GB": 24}, MayLend: true, MayBorrow: true,
			Preemptible: true, MaxJobDuration: 24 * time.Hour}},
		PriorityClasses:      []PriorityClass{{Name: "normal", Value: 100}},
		DefaultPriorityClass: "normal",
		Queues: []Queue{
			{Name: "vision", Pool: "train", Team: "vision", Cohort: "t", Weight: 1, Quota: map[string]Quota{"H100-80GB": {Nominal: 12}}},
			{Name: "nlp", Pool: "train", Team: "nlp", Cohort: "t", Weight: 1, Quota: map[string]Quota{"H100-80GB": {Nominal: 12}}},
		},
	}
	for i := range m.Clusters {
		if nodes {
			m.Clusters[i].Nodes = []NodeGroup{{Name: m.Clusters[i].Name + "-n", Count: 1, Card: "H100-80GB", GPUs: 8}}
		} else {
			m.Clusters[i].Capacity = map[string]int{"H100-80GB": 8}
		}
	}
	return m
}

func modes(t *testing.T, fn func(t *testing.T, e *Engine)) {
	for _, nodes := range []bool{false, true} {
		t.Run(map[bool]string{false: "counted", true: "nodes"}[nodes], func(t *testing.T) { fn(t, mustEngine(t, clustersModel(nodes))) })
	}
}

// TestClustersSeveral: a job naming two clusters runs in one of them, never
// in a third with room; the reason names where and why.
func TestClustersSeveral(t *testing.T) {
	modes(t, func(t *testing.T, e *Engine) {
		spec := JobSpec{Team: "nlp", Queue: "nlp", GPUs: 8, Clusters: []string{"eu-c", "us-a"}, TimeLimitS: 3600}
		a, b, c := mustSubmit(t, e, spec, t0), mustSubmit(t, e, spec, t0), mustSubmit(t, e, spec, t0)
		e.Schedule(t0)
		got := []string{a.Cluster, b.Cluster}
		slices.Sort(got)
		if !slices.Equal(got, []string{"eu-c", "us-a"}) || c.State != StateQueued {
			t.Fatalf("three 8-GPU jobs on eu-c|us-a: %q %q %s; want eu-c and us-a, the third waiting (eu-b is free but not named)", a.Cluster, b.Cluster, c.State)
		}
		if want := "placed in " + a.Cluster + ": fits now (the fullest with room of eu-c, us-a)"; a.PlacementReason != want {
			t.Errorf("reason %q, want %q", a.PlacementReason, want)
		}
		if !strings.Contains(c.PlacementReason, "eu-c, us-a") {
			t.Errorf("waiting reason %q names not its clusters", c.PlacementReason)
		}
	})
}

// TestClustersAnyRefusesTeam: a vision job asking for any cluster runs in
// us-a or eu-b, never in eu-c (nlp's alone), and the reason says so.
func TestClustersAnyRefusesTeam(t *testing.T) {
	modes(t, func(t *testing.T, e *Engine) {
		var jobs []*Job
		for _, cl := range [][]string{{"any"}, nil, {"any"}} {
			jobs = append(jobs, mustSubmit(t, e, JobSpec{Team: "vision", Queue: "vision", GPUs: 8, Clusters: cl, TimeLimitS: 3600}, t0))
		}
		e.Schedule(t0)
		for i, j := range jobs[:2] {
			if j.State != StateAdmitted || j.Cluster == "eu-c" {
				t.Errorf("job %d: %s in %q", i, j.State, j.Cluster)
			}
			if !strings.Contains(j.PlacementReason, "eu-c refuses team vision (open to nlp)") {
				t.Errorf("job %d: reason %q names not the refusal", i, j.PlacementReason)
			}
		}
		if jobs[2].State != StateQueued {
			t.Errorf("a third vision job runs in %s: only eu-c had room, and it refuses vision", jobs[2].Cluster)
		}
		// nlp may use eu-c.
		n := mustSubmit(t, e, JobSpec{Team: "nlp", Queue: "nlp", GPUs: 8, Clusters: []string{"any"}}, t0)
		e.Schedule(t0)
		if n.State != StateAdmitted || n.Cluster != "eu-c" {
			t.Errorf("nlp job: %s in %q, want eu-c", n.State, n.Cluster)
		}
	})
}

// TestClustersLocality: a job with locality region=eu runs only in eu
// clusters that take its team.
func TestClustersLocality(t *testing.T) {
	modes(t, func(t *testing.T, e *Engine) {
		eu := JobSpec{Team: "vision", Queue: "vision", GPUs: 8, Locality: map[string]string{"region": "eu"}}
		a, b := mustSubmit(t, e, eu, t0), mustSubmit(t, e, eu, t0)
		e.Schedule(t0)
		if a.State != StateAdmitted || a.Cluster != "eu-b" || b.State != StateQueued {
			t.Fatalf("eu jobs: %s in %q, %s in %q; want eu-b, then waiting (us-a is us, eu-c nlp's)", a.State, a.Cluster, b.State, b.Cluster)
		}
		for _, want := range []string{"placed in eu-b: fits now", "us-a lacks locality region=eu (its labels: region=us)", "eu-c refuses team vision"} {
			if !strings.Contains(a.PlacementReason, want) {
				t.Errorf("reason %q lacks %q", a.PlacementReason, want)
			}
		}
	})
}

// TestClustersRefusedAtSubmit: bad cluster sets are refused with the field,
// and a job no cluster it names may take is refused naming each rule.
func TestClustersRefusedAtSubmit(t *testing.T) {
	modes(t, func(t *testing.T, e *Engine) {
		for _, tc := range []struct {
			spec JobSpec
			err  error
			want string
		}{
			{JobSpec{Clusters: []string{"eu-c"}}, ErrNotAllowed, "eu-c refuses team vision (open to nlp)"},
			{JobSpec{Cluster: "eu-c"}, ErrNotAllowed, "eu-c refuses team vision"},
			{JobSpec{Clusters: []string{"us-a"}, Locality: map[string]string{"region": "eu"}}, ErrInvalidJob, "us-a lacks locality region=eu"},
			{JobSpec{Locality: map[string]string{"region": "apac"}}, ErrInvalidJob, "eu-b lacks locality region=apac"},
			{JobSpec{Clusters: []string{"us-a", "zz"}}, ErrInvalidJob, `clusters[1]: cluster "zz" does not exist (clusters: us-a, eu-b, eu-c, or "any")`},
			{JobSpec{Cluster: "zz"}, ErrInvalidJob, `cluster: cluster "zz" does not exist`},
			{JobSpec{Clusters: []string{"any", "us-a"}}, ErrInvalidJob, `clusters[0]: "any" stands alone`},
			{JobSpec{Clusters: []string{"us-a", "us-a"}}, ErrInvalidJob, `clusters[1]: "us-a" is listed twice`},
			{JobSpec{Cluster: "us-a", Clusters: []string{"eu-b"}}, ErrInvalidJob, "set one"},
			{JobSpec{Clusters: []string{""}}, ErrInvalidJob, "clusters[0]"},
		} {
			s := tc.spec
			s.Team, s.Queue, s.GPUs = "vision", "vision", 1
			_, err := e.Submit(s, t0)
			if !errors.Is(err, tc.err) || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: %v, want %v naming %q", tc.spec, err, tc.err, tc.want)
			}
		}
	})
}

// TestClustersSoonestReservation: no cluster has room; the job's reservation
// is in the one that frees first, whichever order the clusters are in, and
// never in one it may not use.
func TestClustersSoonestReservation(t *testing.T) {
	for _, tc := range []struct {
		usA, euB time.Duration
		clusters []string
		want     string
		at       time.Duration
	}{
		{3 * time.Hour, time.Hour, []string{"any"}, "eu-b", time.Hour},
		{time.Hour, 3 * time.Hour, []string{"any"}, "us-a", time.Hour},
		{time.Hour, 3 * time.Hour, []string{"eu-b"}, "eu-b", 3 * time.Hour},
	} {
		e := mustEngine(t, clustersModel(true))
		for cl, d := range map[string]time.Duration{"us-a": tc.usA, "eu-b": tc.euB, "eu-c": 2 * time.Hour} {
			team := map[bool]string{true: "nlp", false: "vision"}[cl == "eu-c"]
			mustSubmit(t, e, JobSpec{Team: team, Queue: team, GPUs: 8, Cluster: cl, TimeLimitS: int64(d / time.Second)}, t0)
		}
		e.Schedule(t0)
		j := mustSubmit(t, e, JobSpec{Team: "vision", Queue: "vision", GPUs: 8, Clusters: tc.clusters, TimeLimitS: 3600}, t0)
		e.Schedule(t0)
		at := t0.Add(tc.at)
		if j.State != StateQueued || j.resv == nil || j.resv.Placement.Cluster != tc.want || !j.ExpectedStart.Equal(at) {
			t.Fatalf("us-a busy %v, eu-b %v, clusters %v: %s, expected %v, reason %q; want reserved in %s from %v",
				tc.usA, tc.euB, tc.clusters, j.State, j.ExpectedStart, j.PlacementReason, tc.want, at)
		}
		if !strings.HasPrefix(j.PlacementReason, "reserved in "+tc.want+" from "+at.Format("2006-01-02 15:04 UTC")+": fits there soonest") {
			t.Errorf("reason %q", j.PlacementReason)
		}
		for _, d := range e.Schedule(at) {
			if d.Kind == DecisionExpire {
				if err := e.Confirm(d.Job.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		e.Schedule(at)
		if j.State != StateAdmitted || j.Cluster != tc.want {
			t.Errorf("at %v: %s in %q, want admitted in %s", at, j.State, j.Cluster, tc.want)
		}
	}
}

// boundClusters gives a random model's clusters data-locality labels (zone
// z0, z1, z0, …) and closes c1 to every team but t.
func boundClusters(m *Model) {
	for i := range m.Clusters {
		m.Clusters[i].Labels = map[string]string{"zone": []string{"z0", "z1"}[i%2]}
		if i == 1 {
			m.Clusters[i].Teams = []string{"t"}
		}
	}
}

// randomClusters draws, from r2 (its own source, so that the streams' draws
// are those they were), a team (t or u), a cluster set and a locality.
func randomClusters(r2 *rand.Rand, m Model, spec *JobSpec) {
	if r2.IntN(3) == 0 {
		spec.Team = "u"
	}
	if spec.Cluster == "" {
		switch r2.IntN(4) {
		case 0:
			spec.Clusters = []string{AnyCluster}
		case 1:
			for _, c := range m.Clusters {
				if r2.IntN(2) == 0 {
					spec.Clusters = append(spec.Clusters, c.Name)
				}
			}
		}
	}
	if r2.IntN(4) == 0 {
		spec.Locality = map[string]string{"zone": []string{"z0", "z1"}[r2.IntN(2)]}
	}
}

// specAllows is the property: cluster may run a job of spec (its names, its
// team, its locality), computed apart from the engine.
func specAllows(m Model, s JobSpec, cluster string) bool {
	names := s.Clusters
	if s.Cluster != "" {
		names = []string{s.Cluster}
	}
	if len(names) > 0 && names[0] != AnyCluster && !slices.Contains(names, cluster) {
		return false
	}
	for _, c := range m.Clusters {
		if c.Name != cluster {
			continue
		}
		if len(c.Teams) > 0 && !slices.Contains(c.Teams, s.Team) {
			return false
		}
		for k, v := range s.Locality {
			if c.Labels[k] != v {
				return false
			}
		}
		return true
	}
	return false
}

// TestClustersRestartKeepsRunningJobs: a restart with a model whose cluster
// now refuses a team keeps that team's running job there (it holds the GPUs)
// and places nothing new of it there; a queued job the clusters refuse is
// dropped, reported, as any job the new model no longer allows.
func TestClustersRestartKeepsRunningJobs(t *testing.T) {
	modes(t, func(t *testing.T, e *Engine) {
		run := mustSubmit(t, e, JobSpec{Team: "vision", Queue: "vision", GPUs: 8, Cluster: "eu-b", TimeLimitS: 3600}, t0)
		wait := mustSubmit(t, e, JobSpec{Team: "vision", Queue: "vision", GPUs: 8, Cluster: "eu-b", TimeLimitS: 3600}, t0)
		e.Schedule(t0)
		if run.State != StateAdmitted || wait.State != StateQueued {
			t.Fatalf("run %s, wait %s", run.State, wait.State)
		}
		saved := savedOverJSON(t, e)
		m := e.Model()
		for i := range m.Clusters {
			if m.Clusters[i].Name == "eu-b" {
				m.Clusters[i].Teams = []string{"nlp"} // vision is no longer welcome
			}
		}
		e2 := mustEngine(t, m)
		dropped, unplaced := e2.Restore(e.Seq(), saved)
		if !slices.Equal(dropped, []string{wait.ID}) || len(unplaced) > 0 {
			t.Fatalf("dropped %v, unplaced %v; want only the queued job %s dropped", dropped, unplaced, wait.ID)
		}
		j, ok := e2.jobs[run.ID]
		if !ok || j.State != StateAdmitted || j.Cluster != "eu-b" {
			t.Fatalf("the running job after the restart: %+v (kept %v); want admitted in eu-b", j, ok)
		}
		if e.place != nil {
			if _, ok := e2.place.st.Placed(run.ID); !ok {
				t.Fatal("the running job holds no GPUs after the restart: they would be given twice")
			}
		}
		next := JobSpec{Team: "vision", Queue: "vision", GPUs: 1, Cluster: "eu-b"}
		if _, err := e2.Submit(next, t0); !errors.Is(err, ErrNotAllowed) {
			t.Fatalf("a new vision job in eu-b: %v, want ErrNotAllowed", err)
		}
	})
}
