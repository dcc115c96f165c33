package sim

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

var update = flag.Bool("update", false, "rewrite testdata goldens")

// starvation is the case: a full fleet of 1-GPU jobs, a stream of
// 1-GPU jobs arriving faster than GPUs free up, and one 8-GPU job behind them.
func starvation() (Config, []Job) {
	c := Config{Clusters: 1, NodesPerCluster: 4, GPUsPerNode: 8, RackNodes: 4, Load: 1, Seed: 1, Horizon: 48 * time.Hour}
	var jobs []Job
	add := func(at time.Duration, gpus int, run time.Duration) {
		req := placement.Request{GPUs: gpus, Cards: []string{Card}}
		if gpus == 8 {
			req.GPUsPerNode = 8
		}
		jobs = append(jobs, Job{ID: fmt.Sprintf("j%03d", len(jobs)), Submit: at, Request: req, Runtime: run, TimeLimit: 2 * run})
	}
	for i := range 32 {
		add(0, 1, time.Duration(60+3*i)*time.Minute)
	}
	add(time.Minute, 8, 2*time.Hour)
	for at := 2 * time.Minute; at < c.Horizon; at += 2 * time.Minute {
		add(at, 1, time.Duration(60+(int(at/time.Minute)*7)%60)*time.Minute)
	}
	return c, jobs
}

func TestStarvationGolden(t *testing.T) {
	c, jobs := starvation()
	var b strings.Builder
	for _, s := range []Strategy{BestEffort, Backfill} {
		r, err := Run(c, jobs, s)
		if err != nil {
			t.Fatal(err)
		}
		big := r.Waits[32]
		started := big < c.Horizon-jobs[32].Submit
		fmt.Fprintf(&b, "%s: 8-GPU job started %v, waited %s\n", s, started, big)
		if started != (s == Backfill) {
			t.Errorf("%s: 8-GPU job started %v", s, started)
		}
	}
	golden := filepath.Join("..", "testdata", "starvation.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("got\n%s\nwant (%s)\n%s", b.String(), golden, want)
	}
}

// TestReservationsHold runs short weeks at several seeds: under backfill no
// reserved job starts later than its first reservation (run times stay within
// time limits) — with slack, than its first reservation's hold; with
// re-planned starts too — and every strategy is deterministic.
func TestReservationsHold(t *testing.T) {
	for seed := range uint64(6) {
		c := DefaultConfig()
		c.Seed, c.Horizon, c.NodesPerCluster = seed+1, 36*time.Hour, 16
		switch seed {
		case 3:
			c.Slack = 2
		case 4:
			c.Replan = 8
		case 5:
			c.Replan, c.Slack = 8, 1
		}
		jobs := Workload(c)
		for _, s := range []Strategy{Backfill, Conservative} {
			r, err := Run(c, jobs, s)
			if err != nil {
				t.Fatal(err)
			}
			if r.ReservationBroken > 0 {
				t.Errorf("seed %d %s: %d reserved jobs started after their reservation", c.Seed, s, r.ReservationBroken)
			}
			again, _ := Run(c, jobs, s)
			if Table([]Result{r}) != Table([]Result{again}) {
				t.Errorf("seed %d %s: not deterministic", c.Seed, s)
			}
		}
	}
}

func TestWorkloadLoad(t *testing.T) {
	c := DefaultConfig()
	jobs := Workload(c)
	work := 0.0
	for _, j := range jobs {
		work += float64(j.Request.GPUs) * j.Runtime.Hours()
		if j.TimeLimit < 2*j.Runtime || j.TimeLimit > 10*j.Runtime+15*time.Minute {
			t.Fatalf("%s: limit %s for run %s", j.ID, j.TimeLimit, j.Runtime)
		}
	}
	if load := work / (float64(c.GPUs()) * c.Horizon.Hours()); load < c.Load || load > c.Load+0.1 {
		t.Errorf("offered load %.3f, want %.2f", load, c.Load)
	}
}
