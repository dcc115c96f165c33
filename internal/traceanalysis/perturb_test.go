package traceanalysis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
)

var tsField = regexp.MustCompile(`"ts":"([^"]+)"`)

// shiftLine moves a line's time by d.
func shiftLine(t *testing.T, line string, d time.Duration) string {
	t.Helper()
	m := tsField.FindStringSubmatch(line)
	at, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(line, m[0], fmt.Sprintf(`"ts":%q`, at.Add(d).Format(time.RFC3339Nano)), 1)
}

// billOf runs the trace and returns its chargeback as JSON, the report and the
// error.
func billOf(t *testing.T, cfg Config, lines []string) (string, *Report, error) {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(t.Context(), strings.NewReader(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		return "", nil, err
	}
	b, err := json.Marshal(rep.Chargeback)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), rep, nil
}

// TestPerturbedTraceBillsTheSameOrFails is the property that keeps bad input
// from bending the bill: a trace reordered within the window, or with lines
// repeated, bills exactly what the clean trace bills; a trace reversed,
// shuffled end to end, with a line moved a day ahead, an hour ahead or back, or
// with an impossible value or a job without a team is refused (strict), or with
// --skip-bad-lines bills what is left and says what it left out — never a
// silently different bill. Before ordering, the reversed trace billed a few
// cents and one line a day ahead forty times the bill.
func TestPerturbedTraceBillsTheSameOrFails(t *testing.T) {
	cfg := testConfig(t)
	clean := strings.Split(strings.TrimSuffix(string(fixtureTraceOf(t, 20*time.Minute, 10*time.Second)), "\n"), "\n")
	want, rep, err := billOf(t, cfg, clean)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Chargeback) != 2 || rep.Trace.ReorderedLines != 0 {
		t.Fatalf("clean trace: %d chargeback rows, %d reordered lines", len(rep.Chargeback), rep.Trace.ReorderedLines)
	}
	rng := rand.New(rand.NewPCG(38, 1))
	pick := func() int { return 4 + rng.IntN(len(clean)-4) } // a sample line
	type perturbation struct {
		name  string
		lines []string
		same  bool // the bill must equal the clean one (else the trace must be refused)
	}
	var ps []perturbation
	{ // shuffled in blocks of 20 lines (5 samples, 50 s of trace: within the window)
		l := slices.Clone(clean)
		for i := 0; i < len(l); i += 20 {
			b := l[i:min(i+20, len(l))]
			rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
		}
		ps = append(ps, perturbation{"shuffled within the window", l, true})
	}
	{
		l := slices.Clone(clean)
		for range 50 {
			i := pick()
			l = slices.Insert(l, i+rng.IntN(8), l[i])
		}
		ps = append(ps, perturbation{"50 lines repeated", l, true})
	}
	{
		l := slices.Clone(clean)
		slices.Reverse(l)
		ps = append(ps, perturbation{"reversed", l, false})
	}
	{
		l := slices.Clone(clean)
		rng.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
		ps = append(ps, perturbation{"shuffled end to end", l, false})
	}
	for _, d := range []time.Duration{24 * time.Hour, 61 * time.Minute, -time.Hour, -10 * time.Minute} {
		l := slices.Clone(clean)
		i := pick()
		l[i] = shiftLine(t, l[i], d)
		ps = append(ps, perturbation{fmt.Sprintf("a line moved %s", d), l, false})
	}
	for _, bad := range []struct{ name, from, to string }{
		{"process memory beyond its GPU's", `"fb_used_mib":20000,"sm_util"`, `"fb_used_mib":900000,"sm_util"`},
		{"energy counter at 2^64-1", `"power_w":80`, `"power_w":80,"energy_mj":18446744073709551615`},
		{"gpu index past 65,535", `"gpu_index":1`, `"gpu_index":70000`},
		{"a job without a team", `"team":"ml",`, ``},
	} {
		l := slices.Clone(clean)
		i := slices.IndexFunc(l, func(s string) bool { return strings.Contains(s, bad.from) })
		if i < 0 {
			t.Fatalf("%s: no line holds %s", bad.name, bad.from)
		}
		l[i] = strings.Replace(l[i], bad.from, bad.to, 1)
		ps = append(ps, perturbation{bad.name, l, false})
	}
	if testing.Short() { // each run opens and migrates a store of its own
		ps = slices.DeleteFunc(ps, func(p perturbation) bool {
			return !strings.HasPrefix(p.name, "shuffled within") && p.name != "reversed" && !strings.HasPrefix(p.name, "a line moved 24h") && !strings.HasPrefix(p.name, "process memory")
		})
	}
	for _, p := range ps {
		got, _, err := billOf(t, cfg, p.lines)
		switch {
		case p.same && err != nil:
			t.Errorf("%s: refused: %v", p.name, err)
		case p.same && got != want:
			t.Errorf("%s: billed\n%s\nthe clean trace\n%s", p.name, got, want)
		case !p.same && err == nil:
			t.Errorf("%s: accepted (billed the same: %v), want refused", p.name, got == want)
		case !p.same && !refusal(err):
			t.Errorf("%s: refused with %v, not a trace record's error", p.name, err)
		default:
			t.Logf("%s: %v", p.name, err)
		}
		if p.same {
			continue // nothing to skip: leniently it is the same run
		}
		// Leniently, what is left is billed and what was left out is said.
		lc := cfg
		lc.SkipBadLines = true
		got, rep, err := billOf(t, lc, p.lines)
		if err != nil && !p.same && noTeam(err) {
			continue // ingest's loader refuses a job without a team outright
		}
		if err != nil {
			t.Errorf("%s, skipping bad lines: %v", p.name, err)
			continue
		}
		said := rep.Trace.SkippedLines + rep.Trace.NoTeamJobs
		if got != want && said == 0 {
			t.Errorf("%s, skipping bad lines: billed differently and said nothing:\n%s\nthe clean trace\n%s", p.name, got, want)
		}
		if !p.same && said == 0 {
			t.Errorf("%s, skipping bad lines: nothing reported skipped", p.name)
		}
	}
}

// refusal reports whether err refuses a trace for what it holds: a bad record,
// a job without a team.
func refusal(err error) bool {
	return errors.Is(err, trace.ErrInvalidRecord) || errors.Is(err, ErrNoTeam) || noTeam(err)
}

// noTeam reports whether err is ingest's refusal of a job without a team.
func noTeam(err error) bool {
	return errors.Is(err, schemas.ErrInvalidIdentifier) && strings.Contains(err.Error(), "team: missing")
}

// TestBinaryFileSaysWhatWasSkipped: a binary file read leniently says how many
// lines were skipped and why, not only that there were no records.
func TestBinaryFileSaysWhatWasSkipped(t *testing.T) {
	cfg := testConfig(t)
	cfg.SkipBadLines = true
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("\x7fELF\x02\x01\x01\x00\x00\n\x00\xff\xfe"), 10)
	_, err = a.Run(t.Context(), bytes.NewReader(data))
	if !errors.Is(err, ErrNoRecords) || !strings.Contains(err.Error(), "lines read were skipped") || !strings.Contains(err.Error(), "trace line 1:") {
		t.Errorf("got %v, want no records, the lines skipped and the first", err)
	}
}
