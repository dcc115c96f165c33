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
)

// addFileSeeds adds the whole files of testdata, and files built to be awkward:
// every line doubled, a record far from the rest, blank lines and a byte order
// mark, a gzipped file, no final newline, a line over the limit.
func addFileSeeds(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata: %v", err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		var doubled bytes.Buffer
		for _, l := range bytes.SplitAfter(data, []byte("\n")) {
			doubled.Write(l)
			doubled.Write(l)
		}
		f.Add(doubled.Bytes())
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(data)
		_ = zw.Close()
		f.Add(gz.Bytes())
		f.Add(bytes.TrimRight(data, "\n"))
	}
	gpu := func(ts string) string {
		return `{"type":"gpu","ts":"` + ts + `","node":"n1","gpu_uuid":"GPU-1","gr_engine_active":0.5}` + "\n"
	}
	f.Add([]byte(gpu("2026-03-01T00:00:00Z") + gpu("9999-12-31T23:59:59Z") + gpu("2026-03-01T00:00:01Z")))
	f.Add([]byte(gpu("2026-03-01T00:00:00Z") + gpu("1970-01-01T00:00:00.001Z") + "\n\n  \r\n" + gpu("2027-03-01T00:00:00Z")))
	f.Add([]byte("\xef\xbb\xbf" + gpu("2026-03-01T00:00:00Z") + "\xef\xbb\xbf" + gpu("2026-03-01T00:00:01Z")))
	f.Add([]byte(gpu("2026-03-01T00:00:00Z") + strings.Repeat("x", 300) + "\n" + gpu("2026-03-01T00:00:02Z")))
}

// lineCount is how many lines data holds once decompressed (a last line needs no
// newline), or -1 when it is gzip that does not decompress.
func lineCount(data []byte) int {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return -1
		}
		plain, err := io.ReadAll(io.LimitReader(zr, 64<<20))
		if err != nil {
			return -1
		}
		data = plain
	}
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// FuzzTraceFile reads arbitrary whole files, strictly and leniently, with a small
// line limit: the readers never panic and end after at most one call per line
// (nothing loops on the input's times or content); a strict reader's error is a
// *LineError naming a line of the file; a lenient one accounts for every line it
// skipped; and every record returned lies within MaxSpan of the first.
func FuzzTraceFile(f *testing.F) {
	addFileSeeds(f)
	const maxSpan = 48 * time.Hour
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := lineCount(data)
		for _, strict := range []bool{true, false} {
			r := NewReader(bytes.NewReader(data), ReaderOptions{Strict: strict, MaxLineBytes: 256, MaxErrors: 1 << 20, MaxSpan: maxSpan})
			var first int64
			records, calls := 0, 0
			for {
				calls++
				if lines >= 0 && calls > lines+1 {
					t.Fatalf("strict=%v: %d calls to Next on a file of %d lines", strict, calls, lines)
				}
				rec, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					var le *LineError
					if errors.As(err, &le) {
						if !strict {
							t.Fatalf("a lenient reader returned %v", err)
						}
						if le.Line < 1 || (lines >= 0 && le.Line > lines) || !strings.Contains(err.Error(), fmt.Sprintf("line %d:", le.Line)) {
							t.Fatalf("error %q names line %d of a %d-line file", err, le.Line, lines)
						}
						if _, again := r.Next(); again == nil || again.Error() != err.Error() {
							t.Fatalf("after %v, Next returned %v", err, again)
						}
					}
					break // or a gzip error, from input that starts with the magic
				}
				records++
				ms := rec.TimeMs()
				if first == 0 {
					first = ms
				} else if d := ms - first; d > maxSpan.Milliseconds() || -d > maxSpan.Milliseconds() {
					t.Fatalf("record at %d ms is %d ms from the first, more than the span %s", ms, d, maxSpan)
				}
			}
			if !strict && lines >= 0 && records+r.Skipped() > lines {
				t.Fatalf("lenient: %d records and %d skipped lines from a %d-line file", records, r.Skipped(), lines)
			}
		}
	})
}
