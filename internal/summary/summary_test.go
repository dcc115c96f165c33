package summary

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/internal/simrun"
	"github.com/gpupool/gpupool/internal/traceanalysis"
	"github.com/gpupool/gpupool/schemas"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

var t0 = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

func fp(v float64) *float64 { return &v }

// fixtureFindings covers several GPUs, resolved and open episodes, unpriced waste
// and findings of one kind in two currencies.
func fixtureFindings() []schemas.Finding {
	return []schemas.Finding{
		{Kind: schemas.KindIdle, Severity: schemas.SeverityWarning, State: schemas.StateUpdated, Job: "k8s/ml/idle-job", Team: "ml", Node: "n1",
			GPUUUIDs: []string{"GPU-a"}, FirstSeen: t0.Add(35 * time.Minute), LastSeen: t0.Add(2 * time.Hour), WasteGPUHours: 1.75, WasteCost: 5.4321, Currency: "USD"},
		{Kind: schemas.KindZombie, Severity: schemas.SeverityCritical, State: schemas.StateResolved, Job: "k8s/vision/done-job", Team: "vision", Node: "n1",
			GPUUUIDs: []string{"GPU-c", "GPU-d", "GPU-e"}, PID: 103, FirstSeen: t0.Add(45 * time.Minute), LastSeen: t0.Add(90 * time.Minute), WasteGPUHours: 0.333333, WasteCost: 0.005, Currency: "EUR"},
		{Kind: schemas.KindIdle, Severity: schemas.SeverityWarning, State: schemas.StateResolved, Job: "slurm/a/1", Team: "a", Node: "n2",
			FirstSeen: t0, LastSeen: t0.Add(time.Hour), WasteGPUHours: 1, WasteCost: 3, Currency: "EUR"},
		{Kind: schemas.KindLowUtil, Severity: schemas.SeverityInfo, State: schemas.StateOpen, Job: "slurm/b/2", Team: "b", Node: "n3",
			GPUUUIDs: []string{"GPU-f"}, FirstSeen: t0, LastSeen: t0, WasteGPUHours: 0.125},
		{Kind: schemas.KindZombie, Severity: schemas.SeverityWarning, State: schemas.StateOpen, Job: "", Team: "", Node: "n4",
			GPUUUIDs: []string{"GPU-g", "GPU-h"}, PID: 7, FirstSeen: t0, LastSeen: t0.Add(time.Minute), WasteGPUHours: 2.005, WasteCost: 1.115, Currency: "EUR"},
	}
}

// fixtureRows covers a failed rerun, an unpriced attempt, a job on two card
// types, a team priced in two currencies and a row with no owner.
func fixtureRows() []chargeback.Row {
	return []chargeback.Row{
		{Team: "ml", Project: "ml-proj", Job: "k8s/ml/idle-job", Card: "H100-80GB", GPUHours: 2, IdleGPUHours: 2, Cost: fp(6.5), IdleCost: fp(6.5), FailedRerunCost: fp(0), QueueWaitHours: 0.25, EnergyKWh: 0.32, Currency: "USD"},
		{Team: "ml", Project: "ml-proj", Job: "k8s/ml/busy-job", Card: "H100-80GB", GPUHours: 2.0004, UsedGPUHours: 2.0004, IdleGPUHours: 0, Cost: fp(6.5013), IdleCost: fp(0), FailedRerunCost: fp(6.5013), QueueWaitHours: 0, EnergyKWh: 1.2, Currency: "USD"},
		{Team: "vision", Project: "v", Job: "k8s/vision/done-job", Card: "L40S-48GB", GPUHours: 0.5, UsedGPUHours: 0.4, IdleGPUHours: 0.1, Cost: nil, IdleCost: nil, FailedRerunCost: nil, QueueWaitHours: 1.5, EnergyKWh: 0.1},
		{Team: "vision", Project: "v", Job: "k8s/vision/done-job", Card: "A100-40GB", GPUHours: 0.5, UsedGPUHours: 0.5, IdleGPUHours: 0, Cost: fp(1), IdleCost: fp(0), FailedRerunCost: fp(0), Currency: "USD"},
		{Team: "a", Project: "p", Job: "j1", Card: "L4", GPUHours: 1, UnobservedGPUHours: 1, Cost: fp(1), IdleCost: fp(0), FailedRerunCost: fp(0), Currency: "USD"},
		{Team: "a", Project: "p", Job: "j2", Card: "L4", GPUHours: 1, UsedGPUHours: 0.75, UnobservedGPUHours: 0.25, Cost: fp(1), IdleCost: fp(0), FailedRerunCost: fp(0), Currency: "EUR"},
		{Team: "", Project: "", Job: "", Card: "", GPUHours: 0.3333, Cost: fp(0.335), IdleCost: fp(0.001), FailedRerunCost: fp(0), Currency: "USD"},
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (rerun with -update if intended):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestWriteTraceGolden(t *testing.T) {
	tests := []struct {
		name string
		rep  traceanalysis.Report
	}{
		{"trace.table.golden", traceanalysis.Report{
			Trace: traceanalysis.Span{File: "x/fixture.jsonl.gz", Start: t0, End: t0.Add(2 * time.Hour),
				GPURows: 723, ProcessRows: 1234567, JobEvents: 9, Passes: 25, IntervalSeconds: 300},
			Findings: fixtureFindings(), Chargeback: fixtureRows(), PriceProblems: []pricebook.Problem{{Card: "X"}},
		}},
		{"trace-empty.table.golden", traceanalysis.Report{Trace: traceanalysis.Span{File: "e", IntervalSeconds: 90}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTrace(&b, &tc.rep); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, b.Bytes())
		})
	}
}

func TestAnalyzerGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Analyzer(fixtureFindings(), fixtureRows())); err != nil {
		t.Fatal(err)
	}
	golden(t, "analyzer.table.golden", b.Bytes())
}

func TestSchedulerEffectGolden(t *testing.T) {
	off := simrun.Report{Utilisation: 0.71234, Effective: 0.40251, IdleGPUh: 33.349, ZombieGPUh: 2.05,
		WaitP50: 90 * time.Second, WaitP95: 47*time.Minute + 3*time.Second}
	on := simrun.Report{Enforce: true, Utilisation: 0.6, Effective: 0.55, IdleGPUh: 4.04, ZombieGPUh: 0,
		WaitP50: time.Minute, WaitP95: 20 * time.Minute, Requeued: 3, Actions: map[string]int{"reclaim ok": 5, "kill ok": 2, "notify ok": 9}}
	var b bytes.Buffer
	if err := Write(&b, []Section{SchedulerEffect(off, on)}); err != nil {
		t.Fatal(err)
	}
	golden(t, "scheduler-effect.table.golden", b.Bytes())
}
