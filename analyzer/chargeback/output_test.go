package chargeback

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// TestJobOutput: s1 reports 3.5 M tokens (an L40S, unpriced: no cost per unit),
// nb-1 1,800 samples (3.60 USD for 12/7 GPU-hours: 2 USD per 1,000 samples, 1,050
// samples per GPU-hour), train-1 reports a running total and then its final count
// (the latest wins: 150 steps for 4 USD); the others report nothing: NULL, never 0.
func TestJobOutput(t *testing.T) {
	ctx := t.Context()
	s := openMigrated(t)
	report := func(h, m int, job, event, status string, units, unit string) schemas.JobEvent {
		return schemas.JobEvent{TimeMs: at(h, m).UnixMilli(), Job: job, Event: event, Source: schemas.SourceKubernetes,
			Cluster: "c1", Status: status, Attempt: 1,
			Labels: map[string]string{schemas.LabelOutputUnits: units, schemas.LabelOutputUnit: unit}}
	}
	events := append(tinyJobEvents(),
		report(3, 0, "s1", schemas.EventEnd, schemas.StatusSucceeded, "3500000", "tokens"),
		report(3, 59, "nb-1", schemas.EventStart, "", "1800", "samples"),
		report(1, 0, "train-1", schemas.EventStart, "", "100", "steps"),
		report(1, 30, "train-1", schemas.EventEnd, schemas.StatusFailed, "150", "steps"),
	)
	loadTinyFleetWith(t, s, events)
	if err := Refresh(ctx, s, tinyTo); err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(ctx, "SELECT job, output_units, output_per_gpu_hour, cost_per_units FROM job_output ORDER BY job", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i := range res.Rows {
		j, _ := res.String(i, "job")
		var cells []string
		for _, c := range []string{"output_units", "output_per_gpu_hour", "cost_per_units"} {
			f, _ := res.Float(i, c)
			cells = append(cells, fmt.Sprintf("%.6g", f))
		}
		got[j] = strings.Join(cells, " ")
	}
	want := map[string]string{
		"s1": "3.5e+06 2e+06 NaN", "nb-1": "1800 1050 2", "train-1": "150 150 0.0266667",
		"train-2": "NaN NaN NaN", "s2": "NaN NaN NaN",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("output:\ngot  %v\nwant %v", got, want)
	}
	var b strings.Builder
	for _, q := range []string{"SELECT * FROM job_output ORDER BY job", "SELECT * FROM output_summary ORDER BY ALL"} {
		fmt.Fprintf(&b, "-- %s\n%s\n", q, table(t, s, q, nil))
	}
	checkGolden(t, "output_tiny.txt", b.String())
}
