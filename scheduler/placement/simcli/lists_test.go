package simcli

import (
	"bytes"
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestParseUints(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []uint64
		err      string
	}{
		{name: "one", in: "1", want: []uint64{1}},
		{name: "several", in: "1,2,3", want: []uint64{1, 2, 3}},
		{name: "spaces trimmed", in: " 4 , 5", want: []uint64{4, 5}},
		{name: "largest", in: "18446744073709551615", want: []uint64{18446744073709551615}},
		{name: "not a number", in: "1,x", err: `"x" is not a whole number`},
		{name: "negative", in: "-1", err: `"-1" is not a whole number`},
		{name: "fraction", in: "1.5", err: `"1.5" is not a whole number`},
		{name: "too large", in: "18446744073709551616", err: `"18446744073709551616" is too large`},
		{name: "empty", in: "", err: "item 1 of 1 is empty"},
		{name: "empty item", in: "1,,2", err: "item 2 of 3 is empty"},
		{name: "trailing comma", in: "1,", err: "item 2 of 2 is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseUints(tc.in)
			check(t, got, err, tc.want, tc.err)
		})
	}
}

func TestParseFloats(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []float64
		err      string
	}{
		{name: "one", in: "0.95", want: []float64{0.95}},
		{name: "several", in: "0.75,0.9,1", want: []float64{0.75, 0.9, 1}},
		{name: "exponent and sign", in: "1e-2, -3", want: []float64{0.01, -3}},
		{name: "not a number", in: "0.7,high", err: `"high" is not a finite number`},
		{name: "NaN", in: "NaN", err: `"NaN" is not a finite number`},
		{name: "infinite", in: "0.5,Inf", err: `"Inf" is not a finite number`},
		{name: "overflow", in: "1e400", err: `"1e400" is not a finite number`},
		{name: "empty item", in: ",0.5", err: "item 1 of 2 is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFloats(tc.in)
			check(t, got, err, tc.want, tc.err)
		})
	}
}

func TestParseNames(t *testing.T) {
	allowed := []string{"fifo", "reserve"}
	for _, tc := range []struct {
		name, in string
		allowed  []string
		want     []string
		err      string
	}{
		{name: "any name", in: "pods.csv,pods_gpushare40.csv", want: []string{"pods.csv", "pods_gpushare40.csv"}},
		{name: "allowed", in: "reserve, fifo", allowed: allowed, want: []string{"reserve", "fifo"}},
		{name: "not allowed", in: "fifo,lifo", allowed: allowed, err: `"lifo" is not one of fifo, reserve`},
		{name: "case matters", in: "FIFO", allowed: allowed, err: `"FIFO" is not one of fifo, reserve`},
		{name: "empty set allows nothing", in: "fifo", allowed: []string{}, err: `"fifo" is not one of `},
		{name: "empty", in: " ", err: "item 1 of 1 is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNames(tc.in, tc.allowed)
			check(t, got, err, tc.want, tc.err)
		})
	}
}

func check[T comparable](t *testing.T, got []T, err error, want []T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("got %v, %v; want an error containing %q", got, err, wantErr)
		}
		return
	}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
}

// TestFlags parses command lines through a FlagSet: the defaults stand until a
// flag is given, a flag given twice keeps its last list, and a bad item's error
// names the flag and the item.
func TestFlags(t *testing.T) {
	newSet := func() (*flag.FlagSet, *Uints, *Floats, *Names, *bytes.Buffer) {
		fs := flag.NewFlagSet("sim", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		seeds := Seeds(fs, 1, 2)
		loads := Floats{0.95}
		fs.Var(&loads, "load", "loads")
		queues := NamesVar(fs, "queues", []string{"fifo"}, []string{"fifo", "reserve"}, "queues")
		return fs, seeds, &loads, queues, &out
	}
	fs, seeds, loads, queues, _ := newSet()
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(*seeds, Uints{1, 2}) || !slices.Equal(*loads, Floats{0.95}) || !slices.Equal(queues.List, []string{"fifo"}) {
		t.Fatalf("defaults: %v %v %v", *seeds, *loads, queues.List)
	}
	fs, seeds, loads, queues, _ = newSet()
	if err := fs.Parse([]string{"-seed", "7", "-seed", "8,9", "-load", "0.5,0.75", "-queues", "reserve,fifo"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(*seeds, Uints{8, 9}) || !slices.Equal(*loads, Floats{0.5, 0.75}) || !slices.Equal(queues.List, []string{"reserve", "fifo"}) {
		t.Fatalf("given: %v %v %v", *seeds, *loads, queues.List)
	}
	for args, want := range map[string]string{
		"-seed 1,x":     `invalid value "1,x" for flag -seed: "x" is not a whole number`,
		"-load 0.5,,1":  `invalid value "0.5,,1" for flag -load: item 2 of 3 is empty (want a comma-separated list)`,
		"-queues lifo":  `invalid value "lifo" for flag -queues: "lifo" is not one of fifo, reserve`,
		"-seed=-3,4":    `invalid value "-3,4" for flag -seed: "-3" is not a whole number`,
		"-load 0.9,NaN": `invalid value "0.9,NaN" for flag -load: "NaN" is not a finite number`,
	} {
		fs, _, _, _, out := newSet()
		err := fs.Parse(strings.Fields(args))
		if err == nil || err.Error() != want || !strings.Contains(out.String(), want) {
			t.Errorf("%s: got %v, printed %q; want %q", args, err, out, want)
		}
	}
}

// TestUsage shows each list's default as Set reads it, and the names a Names
// flag takes.
func TestUsage(t *testing.T) {
	fs := flag.NewFlagSet("frag", flag.ContinueOnError)
	Seeds(fs, 1, 2, 3)
	NamesVar(fs, "queues", []string{"fifo", "reserve"}, []string{"fifo", "reserve"}, "queue disciplines, comma-separated")
	NamesVar(fs, "tasks", []string{"pods.csv"}, nil, "task files")
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.PrintDefaults()
	for _, want := range []string{
		"-seed seeds\n", "seeds, comma-separated (default 1,2,3)",
		"queue disciplines, comma-separated (any of fifo, reserve) (default fifo,reserve)",
		"task files (default pods.csv)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
}
