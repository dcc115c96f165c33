package scheduler

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// scanExternal is what the index replaces: the first live job, in submission
// order, whose external job is key or, for a Kubernetes pod, a pod of the same
// Job (its namespace and Job name).
func scanExternal(e *Engine, key string, labels map[string]string) *Job {
	for _, j := range e.LiveJobs() {
		x := j.External
		if x == nil {
			continue
		}
		if x.Job == key {
			return j
		}
		name := cmp.Or(x.K8sJob, x.Labels["batch.kubernetes.io/job-name"], x.Labels["job-name"])
		got := cmp.Or(labels["batch.kubernetes.io/job-name"], labels["job-name"])
		if x.Source != schemas.SourceKubernetes || name == "" || got != name || !strings.HasPrefix(key, "k8s/") {
			continue
		}
		ns, _, _ := strings.Cut(strings.TrimPrefix(key, "k8s/"), "/")
		xns, _, _ := strings.Cut(strings.TrimPrefix(x.Job, "k8s/"), "/")
		if ns == cmp.Or(x.Namespace, xns) {
			return j
		}
	}
	return nil
}

// TestExternalIndexFindsAsScan: over random live jobs standing for Slurm jobs
// and Kubernetes pods (Job names from K8sJob or either label, namespaces from
// the target or the key, the same key or Job on several jobs, jobs without an
// external one), the index finds for every key and label set what a scan of
// the live jobs in submission order finds.
func TestExternalIndexFindsAsScan(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 44))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	target := func() (executor.Target, map[string]string) {
		if r.IntN(3) == 0 {
			return executor.Target{Source: schemas.SourceSlurm, Job: "slurm/" + pick("1", "2", "3", "4")}, nil
		}
		ns, name := pick("ns1", "ns2"), pick("train", "eval", "")
		x := executor.Target{Source: schemas.SourceKubernetes, Job: "k8s/" + ns + "/" + name + "-" + pick("a", "b", "c")}
		labels := map[string]string{}
		switch r.IntN(4) {
		case 0:
			x.K8sJob = name
		case 1:
			labels["batch.kubernetes.io/job-name"] = name
		case 2:
			labels["job-name"] = name
		}
		if r.IntN(3) == 0 {
			x.Namespace = pick("ns1", "ns2")
		}
		x.Labels = labels
		return x, labels
	}
	for round := range 40 {
		e, err := NewEngine(testModel())
		if err != nil {
			t.Fatal(err)
		}
		var keys []executor.Target
		for range 1 + r.IntN(30) {
			j, err := e.Submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 1}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if r.IntN(5) == 0 {
				continue // a job of the scheduler's own
			}
			x, _ := target()
			j.External = &x
			keys = append(keys, x)
		}
		ix := newExternalIndex(e)
		for range 60 {
			key, labels := target()
			if len(keys) > 0 && r.IntN(2) == 0 {
				key.Job = keys[r.IntN(len(keys))].Job // a key some job has
			}
			want, got := scanExternal(e, key.Job, labels), ix.find(key.Job, labels)
			if got != want {
				t.Fatalf("round %d: find(%s, %v) = %s, the scan finds %s", round, key.Job, labels, jobID(got), jobID(want))
			}
		}
	}
}

func jobID(j *Job) string {
	if j == nil {
		return "none"
	}
	return fmt.Sprintf("%s (%+v)", j.ID, *j.External)
}

// BenchmarkExternalLookup resolves 2,000 findings' jobs among 13,400 live jobs
// (the pipeline's 10,000-GPU fleet), half of them standing for Kubernetes pods,
// by a scan of the live jobs per finding (before) and by one index per pass.
func BenchmarkExternalLookup(b *testing.B) {
	e, err := NewEngine(testModel())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 13400 {
		j, err := e.Submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 1}, t0)
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			j.External = &executor.Target{Source: schemas.SourceKubernetes, Job: fmt.Sprintf("k8s/ns/job-%d-pod", i), K8sJob: fmt.Sprintf("job-%d", i)}
		}
	}
	keys := make([]string, 2000)
	for i := range keys {
		keys[i] = fmt.Sprintf("k8s/ns/job-%d-pod", 7*i+1) // odd: no job stands for it, the worst case
	}
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			for _, k := range keys {
				scanExternal(e, k, nil)
			}
		}
	})
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			ix := newExternalIndex(e)
			for _, k := range keys {
				ix.find(k, nil)
			}
		}
	})
}
