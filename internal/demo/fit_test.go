package demo

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/internal/simrun"
	"github.com/gpupool/gpupool/internal/summary"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// wideText is the widest value a text column takes in a demo run, generously.
var wideText = map[string]string{
	"job": "slurm/eu-west-b/12345678", "model_name": "llama-3-70b-instruct", "reason": "reclaimed_by_pool", "kind": "compute_bound",
	"team": "research-lab", "submitted": "2026-12-06 12:43", "wait_min": "not started", "currency": "USD", "ccy": "USD", "unit": "requests",
}

// widen gives res one row of wide values: a text column's widest (wideText, or
// 15 characters: a pool's name), a number of 9 characters (1234567.9).
func widen(res *store.Result) *store.Result {
	row := make([]any, len(res.Columns))
	for i, c := range res.Columns {
		switch {
		case !strings.Contains(c.Type, "String"):
			row[i] = 1234567.9
		case wideText[c.Name] != "":
			row[i] = wideText[c.Name]
		default:
			row[i] = "inference-batch"
		}
	}
	return &store.Result{Columns: res.Columns, Rows: [][]any{row}}
}

// checkFits fails for a line wider than maxWidth columns.
func checkFits(t *testing.T, text string) {
	t.Helper()
	for i, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > maxWidth {
			t.Errorf("line %d is %d columns wide (at most %d): %s", i+1, n, maxWidth, line)
		}
	}
}

// TestSummaryFitsATerminal renders the demo summary's tables, with the store's
// real columns and wider values than a run has: no line is wider than 140
// columns and no caption longer than 200 characters. The two tables of waits
// say which jobs they count.
func TestSummaryFitsATerminal(t *testing.T) {
	st := chdbtest.Open(t)
	ctx := t.Context()
	if _, err := store.Migrate(ctx, st, schemas.MigrationParams{DB: st.Database(), RawTTLDays: 30}); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	s, err := analyzer.Summarize(ctx, st, from, from.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	large, err := largeJobWaits(ctx, st, from, from.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	secs := append(storeSections(s), large)
	secs = append(secs, summary.Analyzer(nil, nil)...)
	wide := Effect{CapacityGPUh: 1e6, AllocatedGPUh: 1e6, GoodputGPUh: 99999.9, IdleGPUh: 99999.9, Utilisation: 1, Effective: 1,
		Waiting: 99999, Requeued: 99999, WaitMean: 9999 * time.Hour, WaitP50: 9999 * time.Hour, WaitP95: 9999 * time.Hour, RequeueP95: 9999 * time.Hour,
		Actions: map[string]int{"admit ok": 99999, "quota-reclaim ok": 99999, "notify ok": 99999, "reclaim ok": 99999, "kill ok": 99999}}
	on := wide
	on.Enforce = true
	secs = append(secs, effectSections(wide, on)...)
	rep := simrun.Report{GoodputGPUh: 99999.9, IdleGPUh: 99999.9, ZombieGPUh: 99999.9, Utilisation: 1, Effective: 1, WaitMean: 9999 * time.Hour,
		WaitP50: 9999 * time.Hour, WaitP95: 9999 * time.Hour, RequeuedWaitP95: 9999 * time.Hour, Requeued: 99999,
		Actions: map[string]int{"reclaim ok": 99999, "kill ok": 99999}}
	secs = append(secs, fastSections(summary.SchedulerEffect(rep, rep).Table)...)
	for i := range secs {
		if n := utf8.RuneCountInString(secs[i].Title); n > maxCaption {
			t.Errorf("caption of %d characters (at most %d): %s", n, maxCaption, secs[i].Title)
		}
		if len(secs[i].Table.Rows) == 0 {
			secs[i].Table = widen(secs[i].Table)
		}
	}
	var b bytes.Buffer
	if err := summary.Write(&b, fit(secs)); err != nil {
		t.Fatal(err)
	}
	t.Log(b.String())
	checkFits(t, b.String())
	for _, want := range []string{
		"Jobs submitted in the run, every source (hand-started processes too",
		"of jobs submitted in the run that waited for the scheduler",
		"wait (min) of the same jobs as the measured table",
	} {
		if !strings.Contains(strings.ReplaceAll(b.String(), "\n", " "), want) {
			t.Errorf("no caption says %q", want)
		}
	}
}
