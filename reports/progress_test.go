package reports

import (
	"bytes"
	"testing"
	"time"
)

// TestProgressLines checks a pipe gets a line per interval, forced lines always,
// and no in-place redraws.
func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgressLines(&buf, time.Hour)
	p.Update("first", false)
	p.Update("skipped: within the interval", false)
	p.Update("forced", true)
	p.Done()
	if got, want := buf.String(), "first\nforced\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

func TestBar(t *testing.T) {
	for _, tc := range []struct {
		frac float64
		want string
	}{
		{-1, "[░░░░░░░░░░░░░░░░░░░░]"},
		{0.5, "[██████████░░░░░░░░░░]"},
		{2, "[████████████████████]"},
	} {
		if got := Bar(tc.frac); got != tc.want {
			t.Errorf("Bar(%g) = %s, want %s", tc.frac, got, tc.want)
		}
	}
}
