package trace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// readAll reads every record of r, stopping at the first error other than io.EOF.
func readAll(t testing.TB, r *Reader) ([]Record, []int, error) {
	t.Helper()
	var recs []Record
	var lines []int
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return recs, lines, nil
		}
		if err != nil {
			return recs, lines, err
		}
		recs = append(recs, rec)
		lines = append(lines, r.Line())
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test -update and review the diff):\n%s", path, got)
	}
}

func TestReadSampleGolden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewReader(f, ReaderOptions{Strict: true})
	recs, lines, err := readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for i, rec := range recs {
		fmt.Fprintf(&out, "%d %s\n", lines[i], recordString(rec))
	}
	checkGolden(t, filepath.Join("testdata", "sample.golden"), out.String())
	if len(recs) != 20 || r.Line() != 21 || r.Skipped() != 0 {
		t.Errorf("got %d records over %d lines, %d skipped; want 20 over 21 (one blank), 0", len(recs), r.Line(), r.Skipped())
	}
}

// TestReadSampleRules checks, on the sample, each rule of the format that the
// golden file would only show in passing.
func TestReadSampleRules(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, lines, err := readAll(t, NewReader(f, ReaderOptions{Strict: true}))
	if err != nil {
		t.Fatal(err)
	}
	at := func(line int) Record {
		for i, l := range lines {
			if l == line {
				return recs[i]
			}
		}
		t.Fatalf("no record from line %d", line)
		return Record{}
	}
	const t0 = 1796112000000 // 2026-12-01T08:00:00Z
	if g := at(4).GPU; g.TimeMs != t0 || g.Card != "H100-80GB" || g.FBUsedMiB != 61235 || g.EnergyMilliJ != 48213377612 || g.PCIeRxBytesPerS != 3.1e9 {
		t.Errorf("line 4: time, card, rounded memory, energy or pcie wrong: %+v", *g)
	}
	if g := at(5).GPU; !schemas.IsMissing(g.SMActive) || !schemas.IsMissing(g.PCIeTxBytesPerS) || g.GPUUtil != 0.97 {
		t.Errorf("line 5: fields the line lacks should be Missing: %+v", *g)
	}
	if g := at(9).GPU; g.Card != "A100-40GB" || g.MIGProfile != "3g.20gb" || g.FBTotalMiB != 19968 {
		t.Errorf("line 9: a MIG instance has its parent's card type: %+v", *g)
	}
	if g := at(13).GPU; g.TimeMs != t0+1000 || g.XID != 79 {
		t.Errorf("line 13: +02:00 offset should give %d, xid 79: %+v", t0+1000, *g)
	}
	if p := at(19).Process; p.Job != "" || p.FBUsedMiB != 3 || !schemas.IsMissing(p.SMUtil) {
		t.Errorf("line 19: unattributed process: %+v", *p)
	}
	if j := at(2).Job; j.TimeMs != t0-750 || len(j.GPUUUIDs) != 2 || j.Nodes[0] != "gpu-a-001" {
		t.Errorf("line 2: fractional time or lists wrong: %+v", *j)
	}
	if j := at(21).Job; j.Status != schemas.StatusSucceeded || j.ExitCode != 0 || j.Cluster != "us-east" {
		t.Errorf("line 21: %+v", *j)
	}
}

// badLines is what testdata/bad.jsonl holds: one line of each kind of error.
var badLines = []struct {
	line   int
	reason string
}{
	{2, "invalid JSON: unexpected end of line"},
	{3, "invalid JSON: unexpected 't'"},
	{4, `unknown type "disk"`},
	{5, `missing required field "type"`},
	{6, `missing required field "gpu_uuid"`},
	{7, `missing required field "pid"`},
	{8, `missing required field "event"`},
	{9, `event: unknown value "exploded"`},
	{10, `status: unknown value "maybe"`},
	{11, `workload: unknown value "gaming"`},
	{12, "sm_active: 1.5 is outside 0..1"},
	{13, "sm_util: -0.2 is outside 0..1"},
	{14, `ts: "yesterday" is not an RFC 3339 time`},
	{15, "gpu_index: want a number, got a string"},
	{16, "fb_used_mib: -5 is negative"},
	{18, "fb_used_mib: 2000 exceeds fb_total_mib 1000"},
	{19, "invalid JSON: unexpected '['"},
}

func TestReadBadLenient(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "bad.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(bytes.NewReader(data), ReaderOptions{})
	recs, lines, err := readAll(t, r)
	if err != nil {
		t.Fatalf("a lenient reader should skip bad lines, got %v", err)
	}
	if fmt.Sprint(lines) != "[1 17 20]" || len(recs) != 3 {
		t.Errorf("records from lines %v, want [1 17 20]", lines)
	}
	if r.Skipped() != len(badLines) {
		t.Errorf("Skipped() = %d, want %d", r.Skipped(), len(badLines))
	}
	errs := r.Errors()
	if len(errs) != len(badLines) {
		t.Fatalf("Errors() has %d, want %d: %v", len(errs), len(badLines), errs)
	}
	var out strings.Builder
	for i, want := range badLines {
		got := errs[i]
		if got.Line != want.line || !strings.Contains(got.Reason, want.reason) {
			t.Errorf("error %d = line %d %q, want line %d containing %q", i, got.Line, got.Reason, want.line, want.reason)
		}
		fmt.Fprintln(&out, got.Error())
	}
	checkGolden(t, filepath.Join("testdata", "bad.golden"), out.String())
}

func TestReadBadStrict(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "bad.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(bytes.NewReader(data), ReaderOptions{Strict: true})
	recs, _, err := readAll(t, r)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || len(recs) != 1 {
		t.Fatalf("got %d records and %v; want 1 record, then a LineError for line 2", len(recs), err)
	}
	if !errors.Is(err, ErrInvalidRecord) {
		t.Errorf("%v should wrap ErrInvalidRecord", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Errorf("Next after the stop = %v, want the same error %v", err2, err)
	}
	// Each bad line alone stops a strict reader with that line's reason.
	lines := strings.Split(string(data), "\n")
	for _, want := range badLines {
		t.Run(fmt.Sprint("line", want.line), func(t *testing.T) {
			_, err := NewReader(strings.NewReader(lines[want.line-1]), ReaderOptions{Strict: true}).Next()
			if !errors.As(err, &le) || le.Line != 1 || !strings.Contains(le.Reason, want.reason) {
				t.Errorf("got %v, want line 1 containing %q", err, want.reason)
			}
		})
	}
}

func TestReadMaxErrors(t *testing.T) {
	in := strings.Repeat("nope\n", 10)
	r := NewReader(strings.NewReader(in), ReaderOptions{MaxErrors: 3})
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if r.Skipped() != 10 || len(r.Errors()) != 3 || r.Errors()[2].Line != 3 {
		t.Errorf("skipped %d, kept %v; want 10 skipped, lines 1..3 kept", r.Skipped(), r.Errors())
	}
}

const gpuLine = `{"type":"gpu","ts":"2026-12-01T08:00:00Z","node":"n1","gpu_uuid":"GPU-1"}`

func TestReadLongLine(t *testing.T) {
	long := `{"type":"gpu","ts":"2026-12-01T08:00:00Z","node":"n1","gpu_uuid":"GPU-1","pad":"` + strings.Repeat("x", 300<<10) + `"}`
	for _, tc := range []struct {
		name     string
		max      int
		wantRecs int
	}{
		{"under the limit", 1 << 20, 3},
		{"over the limit", 200 << 10, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := gpuLine + "\n" + long + "\n" + gpuLine // the last line has no newline
			r := NewReader(strings.NewReader(in), ReaderOptions{MaxLineBytes: tc.max})
			recs, lines, err := readAll(t, r)
			if err != nil || len(recs) != tc.wantRecs || lines[len(lines)-1] != 3 {
				t.Fatalf("got %d records (lines %v), %v; want %d", len(recs), lines, err, tc.wantRecs)
			}
			if tc.wantRecs == 2 && (r.Skipped() != 1 || !strings.Contains(r.Errors()[0].Reason, "longer than")) {
				t.Errorf("want one too-long line reported, got %v", r.Errors())
			}
		})
	}
}

func TestReadGzipByMagic(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	io.WriteString(zw, gpuLine+"\r\n\n"+gpuLine+"\n")
	zw.Close()
	data := buf.Bytes()
	recs, _, err := readAll(t, NewReader(bytes.NewReader(data), ReaderOptions{Strict: true}))
	if err != nil || len(recs) != 2 {
		t.Fatalf("got %d records, %v; want 2", len(recs), err)
	}
	// A truncated stream is a read error, not a bad line.
	_, _, err = readAll(t, NewReader(bytes.NewReader(data[:len(data)-6]), ReaderOptions{}))
	var le *LineError
	if err == nil || errors.As(err, &le) {
		t.Errorf("truncated gzip: got %v, want a read error", err)
	}
}

func TestReadEmpty(t *testing.T) {
	for _, in := range []string{"", "\n", "\ufeff\n  \n"} {
		if _, err := NewReader(strings.NewReader(in), ReaderOptions{Strict: true}).Next(); !errors.Is(err, io.EOF) {
			t.Errorf("%q: got %v, want io.EOF", in, err)
		}
	}
}

// TestDecodeLine covers the rules of single fields.
func TestDecodeLine(t *testing.T) {
	const head = `{"type":"gpu","ts":"2026-12-01T08:00:00Z","node":"n1","gpu_uuid":"GPU-1"`
	for _, tc := range []struct {
		name, line string
		check      func(r Record) bool
		reason     string
	}{
		{"default cluster", head + `}`, func(r Record) bool { return r.GPU.Cluster == DefaultCluster }, ""},
		{"empty cluster is default", head + `,"cluster":""}`, func(r Record) bool { return r.GPU.Cluster == DefaultCluster }, ""},
		{"null is absent", head + `,"sm_active":null,"cluster":null}`, func(r Record) bool { return schemas.IsMissing(r.GPU.SMActive) && r.GPU.Cluster == DefaultCluster }, ""},
		{"type last", `{"ts":"2026-12-01T08:00:00Z","node":"n1","gpu_uuid":"GPU-1","type":"gpu"}`, func(r Record) bool { return r.Kind == KindGPU }, ""},
		{"unknown nested field", head + `,"extra":{"a":[1,{"b":null}],"c":true}}`, func(r Record) bool { return true }, ""},
		{"duplicate key: last wins", head + `,"gpu_index":1,"gpu_index":2}`, func(r Record) bool { return r.GPU.GPUIndex == 2 }, ""},
		{"escaped strings", head + `,"model":"NVIDIA \u00e9\"\\"}`, func(r Record) bool { return r.GPU.Model == "NVIDIA é\"\\" }, ""},
		{"control character in text", head + `,"model":"NVIDIA\n"}`, nil, `model: "NVIDIA\n" has '\n' at byte 6 (text must be printable UTF-8)`},
		{"gpu_uuid out of its set", head[:len(head)-1] + `\u00e9"}`, nil, `gpu_uuid: "GPU-1é" has the non-ASCII character 'é' at byte 5 (allowed: ASCII letters a-z and A-Z, digits 0-9 and "-_./:@+"`},
		{"team too long", `{"type":"job","ts":"2026-12-01T08:00:00Z","job":"j","event":"submit","team":"` + strings.Repeat("t", 64) + `"}`, nil, "team: \"" + strings.Repeat("t", 64) + "\" is 64 bytes, longer than 63"},
		{"sub-millisecond time", `{"type":"job","ts":"2026-12-01T08:00:00.123999Z","job":"j","event":"end"}`, func(r Record) bool { return r.Job.TimeMs%1000 == 123 && r.Job.Cluster == DefaultCluster }, ""},
		{"memory rounds", head + `,"fb_total_mib":1.5e3,"fb_used_mib":0.4}`, func(r Record) bool { return r.GPU.FBTotalMiB == 1500 && r.GPU.FBUsedMiB == 0 }, ""},
		{"no card without model", head + `}`, func(r Record) bool { return r.GPU.Card == "unknown" }, ""},
		{"MIG card without size in model", head + `,"model":"NVIDIA H200","mig_profile":"1g.18gb","fb_total_mib":16384}`, func(r Record) bool { return r.GPU.Card == "H200" }, ""},
		{"ratio slack", head + `,"gpu_util":1.0005}`, func(r Record) bool { return r.GPU.GPUUtil == 1.0005 }, ""},
		{"energy at its bound", head + `,"energy_mj":9007199254740992}`, func(r Record) bool { return r.GPU.EnergyMilliJ == 1<<53 }, ""},
		{"energy counter at 2^64-1", head + `,"energy_mj":18446744073709551615}`, nil, "energy_mj: 18446744073709551615 is out of range (at most 9007199254740992)"},
		{"index past 16 bits", head + `,"gpu_index":65536}`, nil, "gpu_index: 65536 is out of range (at most 65535)"},
		{"negative exit code", `{"type":"job","ts":"2026-12-01T08:00:00Z","job":"j","event":"end","exit_code":-9}`, func(r Record) bool { return r.Job.ExitCode == -9 }, ""},
		{"empty list", `{"type":"job","ts":"2026-12-01T08:00:00Z","job":"j","event":"start","nodes":[]}`, func(r Record) bool { return r.Job.Nodes == nil }, ""},
		{"fractional index", head + `,"gpu_index":1.5}`, nil, "gpu_index: 1.5 is not an integer"},
		{"index out of range", head + `,"gpu_index":4294967296}`, nil, "gpu_index: 4294967296 is out of range"},
		{"float out of range", head + `,"power_w":1e39}`, nil, "power_w: 1e39 is out of range"},
		{"negative power", head + `,"power_w":-1}`, nil, "power_w: -1 is outside 0..5000"},
		{"power past physics", head + `,"power_w":1e30}`, nil, "power_w: 1e+30 is outside 0..5000"},
		{"temperature past physics", head + `,"temp_c":-1e38}`, nil, "temp_c: -1e+38 is outside -40..150"},
		{"empty node", `{"type":"gpu","ts":"2026-12-01T08:00:00Z","node":"","gpu_uuid":"GPU-1"}`, nil, `missing required field "node"`},
		{"type not a string", `{"type":1}`, nil, "type: want a string, got a number"},
		{"list of numbers", `{"type":"job","ts":"2026-12-01T08:00:00Z","job":"j","event":"start","nodes":[1]}`, nil, "nodes: want an array of strings"},
		{"before 1970", `{"type":"job","ts":"1969-12-31T23:59:59Z","job":"j","event":"end"}`, nil, "ts: -1000 ms is not between 1970 and 9999"},
		{"trailing garbage", head + `}x`, nil, "invalid JSON: unexpected 'x' after the object"},
		{"bad escape", head + `,"model":"\x"}`, nil, "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDecoder()
			rec, reason := d.decode([]byte(tc.line))
			switch {
			case tc.reason != "" && !strings.Contains(reason, tc.reason):
				t.Errorf("reason %q, want it to contain %q", reason, tc.reason)
			case tc.reason == "" && reason != "":
				t.Errorf("rejected: %s", reason)
			case tc.reason == "" && !tc.check(rec):
				t.Errorf("got %s", recordString(rec))
			}
		})
	}
}

func TestModelMemoryGB(t *testing.T) {
	for model, want := range map[string]int{
		"NVIDIA A100-SXM4-40GB": 40, "NVIDIA A100 80GB PCIe": 80, "NVIDIA H100 80GB HBM3": 80,
		"NVIDIA H200": 0, "NVIDIA A30": 0, "NVIDIA H100 NVL 94GB": 94, "GB200": 0, "NVIDIA A100-PCIE-40GB": 40,
	} {
		if got := modelMemoryGB(model); got != want {
			t.Errorf("modelMemoryGB(%q) = %d, want %d", model, got, want)
		}
	}
}

func TestLookupField(t *testing.T) {
	for i, name := range fieldNames {
		if f, ok := lookupField([]byte(name)); !ok || f != fieldID(i) {
			t.Errorf("lookupField(%q) = %d, %v; want %d", name, f, ok, i)
		}
	}
	if _, ok := lookupField([]byte("Type")); ok {
		t.Error("keys are case-sensitive")
	}
}

// TestReaderBoundsTheSpan refuses a record further than MaxSpan from the first one,
// either way, saying how far; lenient mode skips it and keeps the rest.
func TestReaderBoundsTheSpan(t *testing.T) {
	lines := strings.Join([]string{
		`{"type":"job","ts":"2026-10-31T07:30:00Z","job":"j","event":"submit","team":"t"}`,
		`{"type":"job","ts":"2027-09-30T07:30:00Z","job":"j","event":"start"}`,
		`{"type":"job","ts":"9999-10-31T07:59:00Z","job":"j","event":"end"}`,
		`{"type":"job","ts":"2024-10-31T07:30:00Z","job":"j","event":"end"}`,
		`{"type":"job","ts":"2026-11-01T07:30:00Z","job":"j","event":"end"}`,
	}, "\n")
	_, _, err := readAll(t, NewReader(strings.NewReader(lines), ReaderOptions{Strict: true}))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(le.Reason, "is 7,973 years after the trace's first record (2026-10-31T07:30:00Z); a trace spans at most 366 days") {
		t.Fatalf("strict: %v", err)
	}
	r := NewReader(strings.NewReader(lines), ReaderOptions{})
	recs, _, err := readAll(t, r)
	if err != nil || len(recs) != 3 || r.Skipped() != 2 {
		t.Fatalf("lenient: %d records, %d skipped, %v", len(recs), r.Skipped(), err)
	}
	if errs := r.Errors(); len(errs) != 2 || !strings.Contains(errs[1].Reason, "is 2 years before the trace's first record") {
		t.Errorf("errors %v", errs)
	}
	short := NewReader(strings.NewReader(lines), ReaderOptions{MaxSpan: 48 * time.Hour})
	if recs, _, _ := readAll(t, short); len(recs) != 2 {
		t.Errorf("a 48 h span kept %d records, want 2", len(recs))
	}
}
