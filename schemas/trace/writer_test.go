package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

func TestWriteRoundTrip(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, _, err := readAll(t, NewReader(f, ReaderOptions{Strict: true}))
	if err != nil {
		t.Fatal(err)
	}
	for _, gz := range []bool{false, true} {
		var buf bytes.Buffer
		w := NewWriter(&buf, gz)
		for _, rec := range want {
			if err := w.WriteRecord(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if gz != (buf.Bytes()[0] == 0x1f) {
			t.Errorf("gzip %v: output starts with %x", gz, buf.Bytes()[:2])
		}
		got, _, err := readAll(t, NewReader(&buf, ReaderOptions{Strict: true}))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("gzip %v: read back %d records, want %d", gz, len(got), len(want))
		}
		for i := range want {
			if g, w := recordString(got[i]), recordString(want[i]); g != w {
				t.Errorf("gzip %v: record %d:\n got %s\nwant %s", gz, i, g, w)
			}
		}
	}
}

func TestWriteLine(t *testing.T) {
	s := schemas.NewGPUSample()
	s.TimeMs, s.Node, s.GPUUUID, s.GPUIndex, s.FBTotalMiB = 1796112000250, "n1", "GPU-1", 3, 81559
	s.Model = "NVIDIA \"1\" \\ é"
	s.SMActive, s.PCIeTxBytesPerS, s.TempC, s.XID, s.EnergyMilliJ = 0.5, 5e9, -0.0000001, 13, 1<<53
	var buf bytes.Buffer
	w := NewWriter(&buf, false)
	if err := w.WriteGPU(&s); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	const want = `{"type":"gpu","ts":"2026-12-01T08:00:00.250Z","node":"n1","gpu_uuid":"GPU-1","gpu_index":3,"model":"NVIDIA \"1\" \\ é","fb_total_mib":81559,"fb_used_mib":0,"sm_active":0.5,"pcie_tx_bytes_per_s":5000000000,"energy_mj":9007199254740992,"temp_c":-1e-7,"xid":13}` + "\n"
	if buf.String() != want {
		t.Errorf("got  %s\nwant %s", buf.String(), want)
	}
}

func TestWriteRejects(t *testing.T) {
	ok := schemas.NewGPUSample()
	ok.TimeMs, ok.Node, ok.GPUUUID = 1796112000000, "n1", "GPU-1"
	for _, tc := range []struct {
		name   string
		rec    Record
		reason string
	}{
		{"no node", Record{GPU: func() *schemas.GPUSample { s := ok; s.Node = ""; return &s }()}, `"node"`},
		{"ratio", Record{GPU: func() *schemas.GPUSample { s := ok; s.GPUUtil = 2; return &s }()}, "gpu_util: 2 is outside 0..1"},
		{"no time", Record{Process: &schemas.ProcessSample{Node: "n", GPUUUID: "g"}}, "ts: 0 ms"},
		{"after 9999", Record{Job: &schemas.JobEvent{TimeMs: maxTimeMs + 1, Job: "j", Event: "end"}}, "ts:"},
		{"event", Record{Job: &schemas.JobEvent{TimeMs: 1, Job: "j", Event: "done"}}, `event: unknown value "done"`},
		{"empty", Record{}, "holds no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf, false)
			err := w.WriteRecord(tc.rec)
			if !errors.Is(err, ErrInvalidRecord) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("got %v, want ErrInvalidRecord containing %q", err, tc.reason)
			}
			if err := w.WriteGPU(&ok); err != nil {
				t.Errorf("writer unusable after a rejected record: %v", err)
			}
		})
	}
}

func TestWriteBatch(t *testing.T) {
	g := schemas.NewGPUSample()
	g.TimeMs, g.GPUUUID = 1796112000000, "GPU-1"
	bad := g
	bad.GPUUUID = ""
	b := &schemas.SampleBatch{
		Cluster: "c1", Node: "n1", GPUs: []schemas.GPUSample{g, bad},
		Processes: []schemas.ProcessSample{{TimeMs: g.TimeMs, GPUUUID: "GPU-1", PID: 7, SMUtil: schemas.Missing, MemUtil: schemas.Missing}},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, false)
	err := w.WriteBatch(b)
	if !errors.Is(err, ErrInvalidRecord) || !strings.Contains(err.Error(), "1 of 3 rows") {
		t.Errorf("got %v, want one row of three left out", err)
	}
	if b.GPUs[0].Cluster != "" {
		t.Error("WriteBatch changed the caller's batch")
	}
	w.Close()
	recs, _, err := readAll(t, NewReader(&buf, ReaderOptions{Strict: true}))
	if err != nil || len(recs) != 2 || recs[0].GPU.Node != "n1" || recs[1].Process.Cluster != "c1" {
		t.Fatalf("got %d records, %v", len(recs), err)
	}
	if err := w.WriteGPU(&g); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
}
