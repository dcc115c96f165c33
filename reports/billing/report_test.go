package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/schemas"
)

// TestReportGolden builds November's report of the fixture fleet from the finance
// views and compares its CSV and JSON with testdata (go test -update rewrites
// them), then checks the figures a reader would check by hand.
func TestReportGolden(t *testing.T) {
	s := loadFleet(t)
	// recsys's service reports what it served on 11-29 (4 GPU-hours at 1.20 USD);
	// on 11-30 it reports nothing: its figures are "—", never 0.
	l := ingest.NewLoader(s, 10)
	if err := l.AddJobs(t.Context(), []schemas.JobEvent{{
		TimeMs: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixMilli(), Job: "k8s/recsys/serve-1129", Event: schemas.EventEnd,
		Source: schemas.SourceKubernetes, Cluster: "c1", Status: schemas.StatusSucceeded, Attempt: 1,
		Labels: map[string]string{schemas.LabelOutputUnits: "240000", schemas.LabelOutputUnit: "requests"},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	r, err := Build(t.Context(), s, november(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{FormatCSV, FormatJSON} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, r, format); err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", FileName("chargeback", "2026-11", format)+".golden"), buf.Bytes())
		})
	}

	t.Run("figures", func(t *testing.T) {
		// nlp: train 3 × 4 h on H100 at 4.50 (two days in November) … see the
		// fixture; the figures follow from it by hand.
		want := map[string]float64{"nlp": 4*4.5 + 4*4.5 + 1*4.5 + 2.5*4.5, "vision": 8 * 2.1, "recsys": 8 * 1.2}
		for _, l := range r.Teams {
			if l.Cost == nil || !near(*l.Cost, want[l.Team]) {
				t.Errorf("team %s cost %v, want %v", l.Team, l.Cost, want[l.Team])
			}
		}
		// Energy at c1's 0.25 USD per kWh; one cluster, so its line is the total.
		if r.Totals.EnergyCost == nil || !near(*r.Totals.EnergyCost, 0.25*r.Totals.EnergyKWh) || r.Totals.EnergyKWh == 0 {
			t.Errorf("energy cost %v for %v kWh, want 0.25 USD per kWh", r.Totals.EnergyCost, r.Totals.EnergyKWh)
		}
		if len(r.Clusters) != 1 || r.Clusters[0].Cluster != "c1" || !near(r.Clusters[0].GPUHours, r.Totals.GPUHours) {
			t.Errorf("clusters %+v, want c1 with all %v GPU-h", r.Clusters, r.Totals.GPUHours)
		}
		if r.Totals.QueueWaitCost == nil || r.Totals.QueueWaitGPUHours == 0 {
			t.Errorf("queue-wait cost %v for %v GPU-h: every card is priced", r.Totals.QueueWaitCost, r.Totals.QueueWaitGPUHours)
		}
		// nlp/ft-1 failed (exit code 1) and was rerun: the month's one failure.
		if len(r.Failures) != 1 || r.Failures[0].Reason != "user_error" || r.Failures[0].FailedRerunCost == nil ||
			!near(*r.Failures[0].FailedRerunCost, 4.5) || !near(r.Failures[0].Rate, 1.0/float64(r.EndedAttempts)) {
			t.Errorf("failures %+v of %d ended attempts, want one user_error rerun for 4.50", r.Failures, r.EndedAttempts)
		}
		// 240,000 requests over 8 GPU-hours of serve-1129 and serve-1130: only the
		// reporting 4 count: 60,000 per GPU-hour, 4.80 USD / 240 = 0.02 USD per 1,000.
		for _, o := range r.Output {
			if o.Team == "recsys" && (o.Units == nil || *o.Units != 240000 || o.UnitsPerGPUHour == nil || !near(*o.UnitsPerGPUHour, 60000) ||
				o.CostPerUnits == nil || !near(*o.CostPerUnits, 0.02) || o.ReportingJobs != 1 || o.Jobs != 2) {
				t.Errorf("recsys output %+v", o)
			}
			if o.Team == "vision" && (o.Units != nil || o.UnitsPerGPUHour != nil || o.CostPerUnits != nil) {
				t.Errorf("vision reports no output, got %+v", o)
			}
		}
		if r.Teams[0].Team != "nlp" {
			t.Errorf("teams not ordered by cost: %+v", r.Teams)
		}
		if !near(r.Totals.FailedRerunGPUHours, 1) || r.Totals.FailedRerunCost == nil || !near(*r.Totals.FailedRerunCost, 4.5) {
			t.Errorf("failed reruns %v GPU-h %v", r.Totals.FailedRerunGPUHours, r.Totals.FailedRerunCost)
		}
		if !near(r.PreviousTotals.GPUHours, 8) || r.Change.GPUHours == nil || !near(*r.Change.GPUHours, (27.5-8)/8) {
			t.Errorf("period over period: previous %v GPU-h, change %v", r.PreviousTotals.GPUHours, r.Change.GPUHours)
		}
		if len(r.IdleTrend) != 30 || r.IdleTrend[29].IdleCost == nil || !near(*r.IdleTrend[29].IdleCost, 3*2.1+4.5) {
			t.Errorf("idle trend: %d days, last %+v", len(r.IdleTrend), r.IdleTrend[len(r.IdleTrend)-1])
		}
		// vision's notebook idle from 11:25 (30 min window) to the pass at 11:55: one
		// A100 × 0.5 h at 2.10, still open at the period's end.
		if len(r.Findings) != 1 {
			t.Fatalf("findings: %+v", r.Findings)
		}
		if f := r.Findings[0]; f.Kind != "idle" || f.Team != "vision" || f.Job != "k8s/vision/nb-1130" || f.State != "open" ||
			f.Episode != 1 || f.ResolvedAt != nil || f.GPUs != 1 || len(f.GPUUUIDs) != 1 || f.GPUUUIDs[0] != "GPU-a1" ||
			!near(f.WasteGPUHours, 0.5) || !near(f.WasteCost, 0.5*2.1) {
			t.Errorf("finding: %+v", f)
		}
		if len(r.QueueWait) == 0 || r.QueueWait[0].Team != "vision" || !near(r.QueueWait[0].P95Hours, 1) {
			t.Errorf("queue wait: %+v", r.QueueWait)
		}
	})

	t.Run("timezone", func(t *testing.T) {
		// A Berlin day (CET, UTC+1) runs 23:00–23:00 UTC: its hours of day are an hour
		// later than UTC's, and a one-day report trends per hour.
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		day, err := reports.ParsePeriod("2026-11-30", berlin)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Build(t.Context(), s, day)
		if err != nil {
			t.Fatal(err)
		}
		hours := map[int]bool{}
		for _, u := range r.Utilisation {
			hours[u.HourOfDay] = true
		}
		// GPUs report 07:59–12:00 UTC: 08:59–13:00 in Berlin.
		if !hours[8] || !hours[13] || hours[7] || len(hours) != 6 {
			t.Errorf("Berlin hours of day %v, want 8–13 (UTC 07–12)", hours)
		}
		if len(r.IdleTrend) != 24 || r.IdleTrend[0].Label != "00:00" || !r.IdleTrend[0].Start.Equal(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)) {
			t.Errorf("trend of a Berlin day: %d points from %+v", len(r.IdleTrend), r.IdleTrend[0])
		}
		if r.Previous.Label != "2026-11-29" || r.Totals.GPUHours != 4*3 || r.PreviousTotals.GPUHours != 4*3+1+2.5 {
			t.Errorf("day totals %v GPU-h (previous %s: %v)", r.Totals.GPUHours, r.Previous.Label, r.PreviousTotals.GPUHours)
		}
	})

	t.Run("runner", func(t *testing.T) {
		dir := t.TempDir()
		cfg := reports.DefaultConfig()
		cfg.Dir = dir
		reg := prometheus.NewRegistry()
		m := NewMetrics(reg)
		now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
		posted := &fakePoster{}
		run, err := NewRunner(cfg, s, WithMetrics(m), WithPoster(posted), WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		sc := reports.Schedule{Name: "monthly", Cron: "0 8 1 * *", Period: reports.PreviousMonth,
			Formats: []string{"html", "csv", "json"}, SlackChannel: "C123"}
		if err := run.Run(t.Context(), sc, november(t), now); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"monthly-2026-11.html", "monthly-2026-11.csv", "monthly-2026-11.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Error(err)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 3 {
			t.Errorf("reports dir holds %d entries, want the 3 reports (no temporary files)", len(ents))
		}
		csvData, _ := os.ReadFile(filepath.Join(dir, "monthly-2026-11.csv"))
		var golden bytes.Buffer
		_ = WriteCSV(&golden, r)
		if !bytes.Equal(csvData, golden.Bytes()) {
			t.Error("the runner's CSV (after its own refresh) differs from the report built before it")
		}
		if posted.channel != "C123" || len(posted.files) != 3 {
			t.Errorf("posted to %q with %v", posted.channel, posted.files)
		}
		if got := testutil.ToFloat64(m.Runs.WithLabelValues("monthly", "ok")); got != 1 {
			t.Errorf("runs ok = %v", got)
		}
		if got := testutil.ToFloat64(m.LastSuccess.WithLabelValues("monthly")); got != float64(now.Unix()) {
			t.Errorf("last success = %v", got)
		}
		posted.err = ErrSlack
		if err := run.Run(t.Context(), sc, november(t), now); err == nil {
			t.Error("a Slack failure was not reported")
		}
		if got := testutil.ToFloat64(m.Runs.WithLabelValues("monthly", "slack_error")); got != 1 {
			t.Errorf("runs slack_error = %v", got)
		}
	})
}

type fakePoster struct {
	channel string
	files   []string
	err     error
}

func (p *fakePoster) Post(_ context.Context, channel string, _ *Report, files []string) error {
	p.channel, p.files = channel, files
	return p.err
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

func compareGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./reports/billing -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test ./reports/billing -update rewrites it):\n%s", golden, firstDiff(string(want), string(got)))
	}
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n  want " + w + "\n  got  " + g
		}
	}
	return ""
}

// goldenReport is the fixture's report read back from the JSON golden file, for
// tests that need a report but not the store.
func goldenReport(t *testing.T) *Report {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "chargeback-2026-11.json.golden"))
	if err != nil {
		t.Fatalf("%v (run go test ./reports/billing -update)", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestJSONRoundTrip: the JSON golden decodes into the same JSON (keys are stable
// and complete).
func TestJSONRoundTrip(t *testing.T) {
	r := goldenReport(t)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	compareGolden(t, filepath.Join("testdata", "chargeback-2026-11.json.golden"), buf.Bytes())
}

var externalRef = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`)

func TestHTMLIsSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, goldenReport(t)); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if m := externalRef.FindString(html); m != "" {
		t.Errorf("HTML refers to an external URL: %q", m)
	}
	if strings.Contains(strings.ToLower(html), "<script") || strings.Contains(strings.ToLower(html), "<link") {
		t.Error("HTML has a script or link element")
	}
	if n := strings.Count(html, "<svg"); n != 3 {
		t.Errorf("%d charts, want 3 (cost by team, utilisation heatmap, idle trend)", n)
	}
	for _, want := range []string{"GPU chargeback — 2026-11", "vision", "k8s/vision/nb-1130", "<style>", "Idle cost per day"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

func TestWriteFilesAtomic(t *testing.T) {
	dir := t.TempDir()
	r := goldenReport(t)
	old := filepath.Join(dir, "chargeback-2026-11.json")
	if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths, err := WriteFiles(dir, "chargeback", r, []string{"json", "pdf"})
	if err == nil {
		t.Fatal("unknown format accepted")
	}
	if len(paths) != 1 || paths[0] != old {
		t.Errorf("paths %v", paths)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d entries, want only the report (temporary files removed)", len(ents))
	}
	data, _ := os.ReadFile(old)
	if bytes.Equal(data, []byte("old")) {
		t.Error("the old report was not replaced")
	}
}
