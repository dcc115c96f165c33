package trace

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var ot0 = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

// gpuLine is a gpu row of GPU g at t0+s seconds.
func otGPULine(s int, g string) string {
	return fmt.Sprintf(`{"type":"gpu","ts":%q,"node":"n1","gpu_uuid":%q,"fb_total_mib":1000}`, ot0.Add(time.Duration(s)*time.Second).Format(time.RFC3339), g)
}

func orderedOpts(strict bool) ReaderOptions {
	return ReaderOptions{Strict: strict, ReorderWindow: time.Minute, FutureSkew: time.Hour}
}

// readAll returns the records' times (seconds after ot0) and GPUs, and the error
// that ended reading (nil at EOF).
func readOrdered(t *testing.T, lines []string, opts ReaderOptions) ([]string, *Reader, error) {
	t.Helper()
	r := NewReader(strings.NewReader(strings.Join(lines, "\n")+"\n"), opts)
	var got []string
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return got, r, nil
		}
		if err != nil {
			return got, r, err
		}
		got = append(got, fmt.Sprintf("%d:%s", (rec.TimeMs()-ot0.UnixMilli())/1000, keyOf(rec).a))
	}
}

// TestOrderedWithinWindow: any permutation of lines within the window reads
// back as the same sequence, sorted, with the lines that came after a later one
// counted.
func TestOrderedWithinWindow(t *testing.T) {
	var lines []string
	for s := range 30 {
		lines = append(lines, otGPULine(s, "GPU-a"), otGPULine(s, "GPU-b"))
	}
	want, _, err := readOrdered(t, lines, orderedOpts(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 60 {
		t.Fatalf("clean trace read back as %v", want)
	}
	rng := rand.New(rand.NewPCG(3, 8))
	for i := range 20 {
		perm := slices.Clone(lines)
		if i == 0 {
			slices.Reverse(perm) // the 30 s trace reversed: within a minute
		} else {
			rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		}
		got, r, err := readOrdered(t, perm, orderedOpts(true))
		if err != nil {
			t.Fatalf("permutation %d: %v", i, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("permutation %d read back as\n%v\nwant\n%v", i, got, want)
		}
		if r.OrderStats().Reordered == 0 {
			t.Errorf("permutation %d: no line counted as reordered", i)
		}
	}
}

// TestOrderedLate: a line further back than the window is refused by a strict
// reader with the count and the first, dropped and counted by a lenient one.
func TestOrderedLate(t *testing.T) {
	var lines []string
	for s := 0; s < 300; s += 10 {
		lines = append(lines, otGPULine(s, "GPU-a"))
	}
	lines = append(lines, otGPULine(5, "GPU-b"), otGPULine(6, "GPU-b"), otGPULine(295, "GPU-b"))
	_, _, err := readOrdered(t, lines, orderedOpts(true))
	var oe *OrderError
	if !errors.As(err, &oe) || oe.Late != 2 || oe.First.Line != 31 || !strings.Contains(oe.First.Reason, "reorder window") {
		t.Fatalf("strict: got %v, want 2 late lines, the first line 31", err)
	}
	if !errors.Is(err, ErrInvalidRecord) {
		t.Errorf("%v does not wrap ErrInvalidRecord", err)
	}
	got, r, err := readOrdered(t, lines, orderedOpts(false))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 31 || r.OrderStats().Late != 2 || r.Skipped() != 2 || r.Errors()[0].Line != 31 {
		t.Errorf("lenient: %d records, stats %+v, skipped %d %v", len(got), r.OrderStats(), r.Skipped(), r.Errors())
	}
}

// TestOrderedFuture: one line a day ahead is a future line wherever it stands
// (first, middle, last); a real gap followed by lines is a jump.
func TestOrderedFuture(t *testing.T) {
	var base []string
	for s := 0; s < 600; s += 10 {
		base = append(base, otGPULine(s, "GPU-a"))
	}
	for _, at := range []int{1, 30, len(base)} {
		lines := slices.Insert(slices.Clone(base), at, otGPULine(86400, "GPU-x"))
		_, _, err := readOrdered(t, lines, orderedOpts(true))
		var oe *OrderError
		if !errors.As(err, &oe) || oe.Future != 1 || oe.First.Line != at+1 || !strings.Contains(oe.First.Reason, "future skew") {
			t.Errorf("future line at %d: got %v, want 1 future line, line %d", at+1, err, at+1)
		}
		got, r, err := readOrdered(t, lines, orderedOpts(false))
		if err != nil || len(got) != len(base) || r.OrderStats().Future != 1 {
			t.Errorf("lenient, future line at %d: %d records, %+v, %v", at+1, len(got), r.OrderStats(), err)
		}
	}
	// A gap of 5 h with lines after it (some stragglers of before it among them).
	lines := slices.Clone(base)
	for s := 0; s < 100; s += 10 {
		lines = append(lines, otGPULine(5*3600+s, "GPU-a"))
		if s == 20 {
			lines = append(lines, otGPULine(595, "GPU-b"))
		}
	}
	got, r, err := readOrdered(t, lines, orderedOpts(true))
	if err != nil || len(got) != len(lines) || r.OrderStats().Future != 0 {
		t.Fatalf("gap: %d of %d records, %+v, %v", len(got), len(lines), r.OrderStats(), err)
	}
	if got[len(base)] != "595:GPU-b" {
		t.Errorf("the straggler is not in place: %v", got[len(base)-2:len(base)+2])
	}
}

// TestPhysicalBounds: a process's memory beyond its GPU's, an energy counter's
// jump to 2^53 and a GPU index past 65,535 are refused with the field.
func TestPhysicalBounds(t *testing.T) {
	ts := func(s int) string { return ot0.Add(time.Duration(s) * time.Second).Format(time.RFC3339) }
	for _, tc := range []struct {
		name, line, want string
	}{
		{"process memory", fmt.Sprintf(`{"type":"process","ts":%q,"node":"n1","gpu_uuid":"GPU-a","pid":1,"fb_used_mib":5000}`, ts(1)), "fb_used_mib: 5000 exceeds its GPU's fb_total_mib 1000 (GPU GPU-a)"},
		{"energy jump", fmt.Sprintf(`{"type":"gpu","ts":%q,"node":"n1","gpu_uuid":"GPU-a","energy_mj":9007199254740992}`, ts(2)), "energy_mj: rose by 9007199254739992 mJ in 2000 ms, more than 5000 W could draw"},
		{"energy 2^64-1", fmt.Sprintf(`{"type":"gpu","ts":%q,"node":"n1","gpu_uuid":"GPU-a","energy_mj":18446744073709551615}`, ts(2)), "energy_mj: 18446744073709551615 is out of range"},
		{"gpu index", fmt.Sprintf(`{"type":"gpu","ts":%q,"node":"n1","gpu_uuid":"GPU-a","gpu_index":65536}`, ts(2)), "gpu_index: 65536 is out of range (at most 65535)"},
		{"gpus", fmt.Sprintf(`{"type":"job","ts":%q,"job":"j","event":"submit","team":"t","gpus":4294967295}`, ts(2)), "gpus: 4294967295 is out of range"},
	} {
		for _, ordered := range []bool{false, true} {
			opts := ReaderOptions{Strict: true}
			if ordered {
				opts = orderedOpts(true)
			}
			lines := []string{
				fmt.Sprintf(`{"type":"gpu","ts":%q,"node":"n1","gpu_uuid":"GPU-a","fb_total_mib":1000,"energy_mj":1000}`, ts(0)),
				tc.line,
			}
			_, _, err := readOrdered(t, lines, opts)
			var le *LineError
			if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(le.Reason, tc.want) {
				t.Errorf("%s (ordered %v): got %v, want line 2: %s", tc.name, ordered, err, tc.want)
			}
		}
	}
}
