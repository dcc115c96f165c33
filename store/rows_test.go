package store

import (
	"math"
	"strings"
	"testing"
	"time"
)

var when = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// sample has one row of values and one of NULLs.
func sample() *Result {
	return &Result{
		Columns: []ColumnMeta{{Name: "s"}, {Name: "n"}, {Name: "f"}, {Name: "b"}, {Name: "t"}, {Name: "a"}, {Name: "fa"}, {Name: "txt"}},
		Rows: [][]any{
			{"x", int64(-3), 0.25, true, when, []any{"u", int64(2)}, []any{1.5, nil, uint64(2)}, "2.5"},
			{nil, nil, nil, nil, nil, nil, nil, nil},
		},
	}
}

func TestRowsReadsTypedCells(t *testing.T) {
	r := Read(sample(), "sample")
	if !r.Next() {
		t.Fatal("no first row")
	}
	if r.Str("s") != "x" || r.Int("n") != -3 || r.Float("f") != 0.25 || !r.Bool("b") || !r.Time("t").Equal(when) {
		t.Errorf("row 0: %q %d %v %v %v", r.Str("s"), r.Int("n"), r.Float("f"), r.Bool("b"), r.Time("t"))
	}
	if got := r.Strs("a"); strings.Join(got, ",") != "u,2" {
		t.Errorf("Strs = %q", got)
	}
	if got := r.Floats("fa"); len(got) != 3 || got[0] != 1.5 || !math.IsNaN(got[1]) || got[2] != 2 {
		t.Errorf("Floats = %v, want [1.5 NaN 2] (a NULL element is NaN)", got)
	}
	if r.Float("txt") != 2.5 || r.Float("n") != -3 || r.Int("f") != 0 || r.Bool("n") != true {
		t.Errorf("conversions: txt %v, n %v, int(f) %v, bool(n) %v", r.Float("txt"), r.Float("n"), r.Int("f"), r.Bool("n"))
	}
	if p := r.NullFloat("f"); p == nil || *p != 0.25 {
		t.Errorf("NullFloat = %v", p)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestRowsNullIsTheZeroValueUnlessAskedForTheNullableForm(t *testing.T) {
	r := Read(sample(), "sample").At(1)
	if r.Str("s") != "" || r.Int("n") != 0 || r.Float("f") != 0 || r.Bool("b") || !r.Time("t").IsZero() {
		t.Errorf("NULLs: %q %d %v %v %v", r.Str("s"), r.Int("n"), r.Float("f"), r.Bool("b"), r.Time("t"))
	}
	if a, f := r.Strs("a"), r.Floats("fa"); a == nil || len(a) != 0 || f == nil || len(f) != 0 {
		t.Errorf("NULL arrays: %#v %#v, want empty non-nil slices", a, f)
	}
	if !math.IsNaN(r.FloatOr("f", math.NaN())) || r.FloatOr("f", -1) != -1 {
		t.Error("FloatOr does not give its value for NULL")
	}
	if r.NullFloat("f") != nil || r.NullTime("t") != nil {
		t.Error("NullFloat or NullTime is not nil for NULL")
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestRowsStrMap(t *testing.T) {
	res := &Result{Columns: []ColumnMeta{{Name: "m"}}, Rows: [][]any{{map[string]any{"k": "v", "n": int64(2)}}, {nil}}}
	r := Read(res, "maps")
	if got := r.At(0).StrMap("m"); len(got) != 2 || got["k"] != "v" || got["n"] != "2" {
		t.Errorf("StrMap = %v, want map[k:v n:2]", got)
	}
	if got := r.At(1).StrMap("m"); got == nil || len(got) != 0 {
		t.Errorf("StrMap of NULL = %#v, want an empty non-nil map", got)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestRowsKeepNaN(t *testing.T) {
	res := &Result{Columns: []ColumnMeta{{Name: "f"}}, Rows: [][]any{{math.NaN()}}}
	r := Read(res, "nan").At(0)
	if !math.IsNaN(r.Float("f")) || !math.IsNaN(r.FloatOr("f", 7)) {
		t.Error("Float or FloatOr turned the engine's NaN into a number")
	}
	if p := r.NullFloat("f"); p == nil || !math.IsNaN(*p) {
		t.Errorf("NullFloat = %v, want a pointer to NaN", p)
	}
}

func TestRowsMissingColumnIsAnErrorNamingColumnAndQuery(t *testing.T) {
	for name, read := range map[string]func(*Rows){
		"Str":       func(r *Rows) { r.Str("nope") },
		"Int":       func(r *Rows) { r.Int("nope") },
		"Float":     func(r *Rows) { r.Float("nope") },
		"FloatOr":   func(r *Rows) { r.FloatOr("nope", 0) },
		"NullFloat": func(r *Rows) { r.NullFloat("nope") },
		"Bool":      func(r *Rows) { r.Bool("nope") },
		"Time":      func(r *Rows) { r.Time("nope") },
		"NullTime":  func(r *Rows) { r.NullTime("nope") },
		"Strs":      func(r *Rows) { r.Strs("nope") },
		"Floats":    func(r *Rows) { r.Floats("nope") },
		"StrMap":    func(r *Rows) { r.StrMap("nope") },
	} {
		r := Read(sample(), "the sample query").At(0)
		read(r)
		err := r.Err()
		if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "the sample query") {
			t.Errorf("%s of a missing column: error %v, want one naming the column and the query", name, err)
		}
	}
}

func TestRowsWrongTypeIsAnError(t *testing.T) {
	for name, read := range map[string]func(*Rows){
		"Float of text":  func(r *Rows) { r.Float("s") },
		"Int of text":    func(r *Rows) { r.Int("s") },
		"Bool of a time": func(r *Rows) { r.Bool("t") },
		"Time of text":   func(r *Rows) { r.Time("s") },
		"Strs of text":   func(r *Rows) { r.Strs("s") },
		"Floats of text": func(r *Rows) { r.Floats("a") },
		"StrMap of text": func(r *Rows) { r.StrMap("s") },
	} {
		r := Read(sample(), "sample").At(0)
		read(r)
		if r.Err() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRowsKeepTheFirstError(t *testing.T) {
	r := Read(sample(), "sample")
	n := 0
	for r.Next() {
		n++
		r.Str("first")
		if got := r.Float("f"); n == 1 && got != 0 {
			t.Errorf("a read after an error = %v, want the zero value", got)
		}
		r.Str("second")
	}
	if n != 1 {
		t.Errorf("Next went on for %d rows after an error, want 1", n)
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), `"first"`) || strings.Contains(err.Error(), "second") {
		t.Errorf("Err = %v, want the first error only", err)
	}
}

func TestRowsNextAndAt(t *testing.T) {
	r := Read(sample(), "sample")
	var got []string
	for r.Next() {
		got = append(got, r.Str("s"))
	}
	if len(got) != 2 || got[0] != "x" || got[1] != "" || r.Err() != nil {
		t.Errorf("rows %q, err %v", got, r.Err())
	}
	if r.Len() != 2 || !r.Has("s") || r.Has("nope") {
		t.Error("Len or Has is wrong")
	}
	r = Read(sample(), "sample")
	r.Str("s")
	if r.Err() == nil {
		t.Error("a read before Next is not an error")
	}
	if r = Read(sample(), "sample").At(2); r.Err() == nil {
		t.Error("At past the last row is not an error")
	}
	if r = Read(nil, "none"); r.Next() || r.Len() != 0 {
		t.Error("a nil result has rows")
	}
}
