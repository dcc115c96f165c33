package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// addSeeds adds every line of testdata/*.jsonl, and some hand-picked lines, to f.
func addSeeds(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata: %v", err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
	}
	for _, s := range []string{
		`{"type":"gpu","ts":"2026-12-01T08:00:00Z","node":"n\ud83d\ude00","gpu_uuid":"\ud800x\udc00\ud800\u0041","model":"\xff\xfe"}`,
		`{"type":"job","ts":"2026-12-01T08:00:00.999999999+14:00","job":"\u0000","event":"end","exit_code":-2147483648,"nodes":["a","\/b"]}`,
		`{"type":"process","ts":"2026-12-01T08:00:00Z","node":"n","gpu_uuid":"g","pid":4294967295,"fb_used_mib":4294967295.4,"sm_util":-0.001}`,
		` { "a" : [ 1 , -0.0e+0 , true , false , null , { } , [ ] ] } `,
		`{"a":1}{"b":2}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":"\u12"}`, `{"a":tru}`, "{\"a\":\"\t\"}", `{`, `"x"`, `{"":0}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzTraceLine feeds arbitrary input to a Reader: it must not panic, and every
// record it returns must write out and read back as the same record.
func FuzzTraceLine(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), ReaderOptions{})
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				var le *LineError
				if errors.As(err, &le) {
					t.Fatalf("a lenient reader returned %v", err)
				}
				break // a gzip error, from input that starts with the magic
			}
			var buf bytes.Buffer
			w := NewWriter(&buf, false)
			if err := w.WriteRecord(rec); err != nil {
				t.Fatalf("cannot write what was read: %v\nrecord: %s", err, recordString(rec))
			}
			w.Close()
			line := append([]byte(nil), buf.Bytes()...)
			back, err := NewReader(&buf, ReaderOptions{Strict: true}).Next()
			if err != nil {
				t.Fatalf("cannot read back %q: %v", line, err)
			}
			if g, w := recordString(back), recordString(rec); g != w {
				t.Fatalf("round trip of %q:\n got %s\nwant %s", line, g, w)
			}
		}
	})
}

// FuzzScanner checks the hand-written JSON scanner against encoding/json: the same
// lines are valid objects, and keys, strings and numbers read the same.
func FuzzScanner(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkScanner(t, data)
	})
}

func checkScanner(t *testing.T, data []byte) {
	t.Helper()
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	want := json.Valid(data) && len(trimmed) > 0 && trimmed[0] == '{'
	var sc scanner
	sc.reset(data)
	got := map[string][]byte{}
	err := sc.object(func(key []byte, start, end int) { got[string(key)] = data[start:end] })
	if err == nil {
		err = sc.end()
	}
	if (err == nil) != want {
		t.Fatalf("scanner says %v, encoding/json says valid object = %v, for %q", err, want, data)
	}
	if !want {
		return
	}
	var ref map[string]json.RawMessage
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref) != len(got) {
		t.Fatalf("scanner found %d keys, encoding/json %d, in %q", len(got), len(ref), data)
	}
	for k, raw := range ref {
		v, ok := got[k]
		if !ok || !bytes.Equal(v, raw) {
			t.Fatalf("key %q: scanner %q, encoding/json %q", k, v, raw)
		}
		if raw[0] != '"' {
			continue
		}
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		sc.reset(v)
		s, err := sc.str()
		if err != nil || string(s) != want {
			t.Fatalf("string %s: scanner %q (%v), encoding/json %q", raw, s, err, want)
		}
	}
}

func TestScannerDepth(t *testing.T) {
	for _, depth := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		// depth-1 nested arrays inside the top-level object
		data := []byte(`{"a":` + string(bytes.Repeat([]byte("["), depth-1)) + string(bytes.Repeat([]byte("]"), depth-1)) + `}`)
		checkScanner(t, data)
	}
}

// FuzzParseFloat32 checks the float fast path against strconv.
func FuzzParseFloat32(f *testing.F) {
	for _, s := range []string{"0", "-0", "0.5", "612.5", "3100000000", "1250000000", "16777215", "16777216", "1.0000001", "-0.0000000001", "100", "1e5", "0.1e1", "00012"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseFloat32Exact([]byte(s))
		if !ok {
			return
		}
		var sc scanner
		sc.reset([]byte(s))
		if lit, err := sc.num(); err != nil || len(lit) != len(s) {
			return // the scanner would not hand this to the fast path
		}
		want, err := strconv.ParseFloat(s, 32)
		if err != nil || got != float32(want) || math.Signbit(float64(got)) != math.Signbit(want) {
			t.Fatalf("parseFloat32Exact(%q) = %v, strconv says %v (%v)", s, got, float32(want), err)
		}
	})
}
