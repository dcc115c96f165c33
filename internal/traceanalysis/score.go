package traceanalysis

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/schemas"
)

// Truth is one labelled condition of a trace (docs/analyzer.md, "Scoring a
// trace"): a problem of Kind on Job from Start to End (zero: to the trace's
// end); zombies also name Node and PID.
type Truth struct {
	Kind  schemas.FindingKind `json:"kind"`
	Job   string              `json:"job"`
	Start time.Time           `json:"start"`
	End   time.Time           `json:"end,omitzero"`
	Node  string              `json:"node,omitempty"`
	PID   uint32              `json:"pid,omitempty"`
}

// ReadTruth reads a truth file: JSON Lines, one Truth a line; blank lines and
// lines starting with # are skipped. A bad line is an error naming it.
func ReadTruth(r io.Reader) ([]Truth, error) {
	var out []Truth
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var t Truth
		if err := json.Unmarshal([]byte(line), &t); err != nil {
			return nil, fmt.Errorf("truth line %d: %w", n, err)
		}
		if !t.Kind.Known() || t.Job == "" && !t.Kind.Info().PerProcess || t.Start.IsZero() {
			return nil, fmt.Errorf("truth line %d: want a known kind, a job and a start, got %q", n, line)
		}
		if !t.End.IsZero() && t.End.Before(t.Start) {
			return nil, fmt.Errorf("truth line %d: end %v before start %v", n, t.End, t.Start)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("truth: %w", err)
	}
	return out, nil
}

// KindScore is one kind's score.
type KindScore struct {
	Kind schemas.FindingKind `json:"kind"`
	// Findings is the episodes of the kind; Matched those about a truth.
	Findings, Matched int
	// Truths is the labelled conditions; Detectable those that lasted the
	// kind's window; Detected those a finding matched.
	Truths, Detectable, Detected int
	// Coverage is the share of the detectable truths' time that matching
	// findings asserted ([since, last_seen]).
	Coverage float64
	// FalseFindings and Misses describe what went wrong, for a person to read.
	FalseFindings, Misses []string
}

// Precision is Matched / Findings (NaN without findings).
func (k KindScore) Precision() float64 { return frac(k.Matched, k.Findings) }

// Recall is Detected / Detectable (NaN without a detectable truth).
func (k KindScore) Recall() float64 { return frac(k.Detected, k.Detectable) }

func frac(a, b int) float64 {
	if b == 0 {
		return nan
	}
	return float64(a) / float64(b)
}

var nan = math.NaN()

// Score compares findings with truth over a trace ending at end. A finding
// matches a truth of its kind and job (zombies: node and PID too) when its
// asserted span, [first_seen − window, last_seen], overlaps the truth's; a truth
// is detectable when it lasted its kind's window (window(kind)) before end.
func Score(findings []schemas.Finding, truth []Truth, window func(schemas.FindingKind) time.Duration, end time.Time) []KindScore {
	out := make([]KindScore, len(schemas.FindingKinds))
	idx := map[schemas.FindingKind]int{}
	for i, k := range schemas.FindingKinds {
		out[i].Kind, idx[k] = k, i
	}
	match := func(f *schemas.Finding, t *Truth) bool {
		if f.Kind != t.Kind || f.Job != t.Job || f.Kind.Info().PerProcess && (f.Node != t.Node || f.PID != t.PID) {
			return false
		}
		return !f.LastSeen.Before(t.Start) && (t.End.IsZero() || f.FirstSeen.Add(-window(f.Kind)).Before(t.End))
	}
	for i := range findings {
		f := &findings[i]
		ks := &out[idx[f.Kind]]
		ks.Findings++
		if slices.ContainsFunc(truth, func(t Truth) bool { return match(f, &t) }) {
			ks.Matched++
			continue
		}
		ks.FalseFindings = append(ks.FalseFindings, fmt.Sprintf("%s %s on %s %s..%s", f.Kind, f.Job, f.Node,
			f.FirstSeen.Format(time.RFC3339), f.LastSeen.Format(time.RFC3339)))
	}
	covered, total := make([]time.Duration, len(out)), make([]time.Duration, len(out))
	for i := range truth {
		t := &truth[i]
		ks := &out[idx[t.Kind]]
		ks.Truths++
		stop := end
		if !t.End.IsZero() && t.End.Before(end) {
			stop = t.End
		}
		if stop.Sub(t.Start) < window(t.Kind) {
			continue
		}
		ks.Detectable++
		total[idx[t.Kind]] += stop.Sub(t.Start)
		var spans [][2]time.Time
		for j := range findings {
			if f := &findings[j]; match(f, t) {
				from := f.Since
				if from.IsZero() || from.Before(t.Start) {
					from = later(t.Start, f.FirstSeen.Add(-window(f.Kind)))
				}
				to := f.LastSeen
				if stop.Before(to) {
					to = stop
				}
				spans = append(spans, [2]time.Time{from, to})
			}
		}
		if len(spans) == 0 {
			ks.Misses = append(ks.Misses, fmt.Sprintf("%s %s %s..%s", t.Kind, t.Job, t.Start.Format(time.RFC3339), stop.Format(time.RFC3339)))
			continue
		}
		ks.Detected++
		covered[idx[t.Kind]] += union(spans)
	}
	for i := range out {
		out[i].Coverage = nan
		if total[i] > 0 {
			out[i].Coverage = float64(covered[i]) / float64(total[i])
		}
	}
	return out
}

// union is the length of the union of spans.
func union(spans [][2]time.Time) time.Duration {
	slices.SortFunc(spans, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	var sum time.Duration
	var cur [2]time.Time
	for i, s := range spans {
		switch {
		case i == 0:
			cur = s
		case !s[0].After(cur[1]):
			cur[1] = later(cur[1], s[1])
		default:
			sum += max(cur[1].Sub(cur[0]), 0)
			cur = s
		}
	}
	return sum + max(cur[1].Sub(cur[0]), 0)
}

// WriteScore prints scores as a table, then what went wrong.
func WriteScore(w io.Writer, scores []KindScore) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %8s %8s %9s %6s %10s %8s %7s %8s\n", "kind", "findings", "matched", "precision", "truths", "detectable", "detected", "recall", "coverage")
	for _, s := range scores {
		fmt.Fprintf(&b, "%-16s %8d %8d %9.3f %6d %10d %8d %7.3f %8.3f\n", s.Kind, s.Findings, s.Matched, s.Precision(), s.Truths, s.Detectable, s.Detected, s.Recall(), s.Coverage)
	}
	for _, s := range scores {
		for _, f := range s.FalseFindings {
			fmt.Fprintf(&b, "false: %s\n", f)
		}
		for _, m := range s.Misses {
			fmt.Fprintf(&b, "missed: %s\n", m)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Windows returns each kind's detection window in the default pools of cfg: how
// long a truth must last to be detectable.
func Windows(cfg findings.Config) func(schemas.FindingKind) time.Duration {
	return cfg.Defaults.Window
}
