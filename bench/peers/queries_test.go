package main

import (
	"path/filepath"
	"testing"

	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

// TestQueriesAgree loads one small trace into Prometheus TSDB and into gpupool's
// tables: each of gpupool's queries (GPU-hours per job and per team per day, a
// job's timeline, the fleet's utilisation now, the Fleet page's two, the idle
// detector's active shares) answers as its question asked of the raw tables does
// (the rollup-based ones included; loadGpupool fails otherwise), and as
// Prometheus does.
func TestQueriesAgree(t *testing.T) {
	cfg, err := fleetConfig(32)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := simTrace(cfg, 60)
	if err != nil {
		t.Fatal(err)
	}
	job, end := busiestJob(tr)
	if job == "" || tr.procRows == 0 {
		t.Fatalf("the trace has no job: %d process rows", tr.procRows)
	}
	prom, err := loadPrometheus(filepath.Join(t.TempDir(), "tsdb"), cfg, tr, job, end)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := chdbtest.Dir()
	if err != nil {
		t.Fatal(err)
	}
	ours, err := loadGpupool(dir, chdbtest.Config(t).Database, chdbtest.LibPath(), cfg, tr, job, end)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range queryNames {
		p, o := prom.queries[n].ans, ours.queries[n].ans
		if len(p) == 0 {
			t.Errorf("%s: Prometheus answered nothing", n)
		}
		if err := compare(p, o, 0.01); err != nil {
			t.Errorf("%s: gpupool's answer is not Prometheus's: %v", n, err)
		}
	}
}
