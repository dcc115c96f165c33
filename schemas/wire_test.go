package schemas

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/gpupool/gpupool/schemas/wirepb"
)

func sampleBatch() *SampleBatch {
	b := &SampleBatch{Cluster: "c1", Node: "gpu-a-001", CollectorID: "abc", Seq: 7}
	for i := 0; i < 3; i++ {
		g := NewGPUSample()
		g.TimeMs = 1_796_000_000_000 + int64(i%2)*1000
		g.GPUUUID = []string{"GPU-1", "GPU-2", "MIG-3"}[i]
		g.GPUIndex = uint32(i)
		g.Model, g.Card, g.DriverVersion = "NVIDIA A100-SXM4-40GB", "A100-40GB", "570.86.15"
		if i == 2 {
			g.MIGProfile = "1g.5gb"
		}
		g.FBTotalMiB, g.FBUsedMiB = 40960, uint32(1000*i)
		g.SMActive, g.GrEngineActive, g.GPUUtil = 0.25*float32(i), 0.5, 1
		g.PowerW, g.EnergyMilliJ, g.TempC, g.XID, g.ClockEventReasons = 250, 123456789, 61, uint32(i*79), 1<<3
		b.GPUs = append(b.GPUs, g)
		b.Processes = append(b.Processes, ProcessSample{
			TimeMs: g.TimeMs, GPUUUID: g.GPUUUID, PID: uint32(4000 + i), ProcessName: "python3",
			Job: []string{"k8s/ns/pod", "", "slurm/c1/42"}[i], FBUsedMiB: uint32(900 * i), SMUtil: 0.1, MemUtil: Missing,
		})
	}
	return b
}

// equalBatch compares batches treating NaN as equal to NaN.
func equalBatch(t *testing.T, got, want *SampleBatch) {
	t.Helper()
	norm := func(b *SampleBatch) *SampleBatch {
		c := *b
		c.GPUs = append([]GPUSample(nil), b.GPUs...)
		c.Processes = append([]ProcessSample(nil), b.Processes...)
		for i := range c.GPUs {
			g := &c.GPUs[i]
			g.Cluster, g.Node = b.Cluster, b.Node
			for _, f := range []*float32{&g.GrEngineActive, &g.SMActive, &g.SMOccupancy, &g.TensorActive, &g.DRAMActive, &g.GPUUtil, &g.PCIeTxBytesPerS, &g.PCIeRxBytesPerS, &g.PowerW, &g.TempC} {
				if IsMissing(*f) {
					*f = -12345
				}
			}
		}
		for i := range c.Processes {
			p := &c.Processes[i]
			p.Cluster, p.Node = b.Cluster, b.Node
			for _, f := range []*float32{&p.SMUtil, &p.MemUtil} {
				if IsMissing(*f) {
					*f = -12345
				}
			}
		}
		return &c
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("batch differs:\n got %+v\nwant %+v", g, w)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	want := sampleBatch()
	enc, dec := NewEncoder(), NewDecoder()
	data, err := enc.Encode(nil, want)
	if err != nil {
		t.Fatal(err)
	}
	var got SampleBatch
	if err := dec.Decode(data, &got); err != nil {
		t.Fatal(err)
	}
	equalBatch(t, &got, want)
	// Encoder and decoder reuse buffers: a second, different batch must not
	// inherit anything from the first.
	small := &SampleBatch{Cluster: "c2", Node: "n2", Seq: 8, GPUs: want.GPUs[:1]}
	data, err = enc.Encode(nil, small)
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(data, &got); err != nil {
		t.Fatal(err)
	}
	equalBatch(t, &got, small)
}

// TestDriverVersionColumn: the driver version travels as a dictionary column,
// sent only when a row has one, and a reference out of the dictionary is refused.
func TestDriverVersionColumn(t *testing.T) {
	b := sampleBatch()
	with, err := NewEncoder().Encode(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b.GPUs {
		b.GPUs[i].DriverVersion = ""
	}
	without, err := NewEncoder().Encode(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	var pb wirepb.SampleBatch
	if err := proto.Unmarshal(without, &pb); err != nil || len(pb.Gpus.DriverVersion) != 0 {
		t.Fatalf("batch without driver versions sends the column: %v, %v", pb.Gpus.DriverVersion, err)
	}
	if err := proto.Unmarshal(with, &pb); err != nil || len(pb.Gpus.DriverVersion) != len(b.GPUs) {
		t.Fatalf("batch with driver versions: column %v, %v", pb.Gpus.DriverVersion, err)
	}
	pb.Gpus.DriverVersion[1] = uint32(len(pb.Dict))
	bad, _ := proto.Marshal(&pb)
	var got SampleBatch
	if err := NewDecoder().Decode(bad, &got); err == nil || !strings.Contains(err.Error(), "gpus.driver_version") {
		t.Errorf("a driver_version reference past the dictionary: %v, want an error naming the column", err)
	}
}

func TestEncodeRejectsForeignRows(t *testing.T) {
	b := sampleBatch()
	b.GPUs[1].Node = "other-node"
	if _, err := NewEncoder().Encode(nil, b); err == nil {
		t.Fatal("a row from another node was encoded into the batch")
	}
}

func TestDecodeOlderWriterFewerColumns(t *testing.T) {
	// An older collector that knew only time, uuid and memory.
	pb := &wirepb.SampleBatch{
		SchemaVersion: 1, Cluster: "c", Node: "n", Dict: []string{"", "GPU-1"},
		Gpus: &wirepb.GPUColumns{TsDeltaMs: []int64{1000, 10}, GpuUuid: []uint32{1, 1}, FbUsedMib: []uint32{5, 6}},
	}
	data, _ := proto.Marshal(pb)
	var b SampleBatch
	if err := NewDecoder().Decode(data, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.GPUs) != 2 || b.GPUs[1].TimeMs != 1010 || b.GPUs[1].FBUsedMiB != 6 {
		t.Fatalf("decoded %+v", b.GPUs)
	}
	if !IsMissing(b.GPUs[0].SMActive) || !IsMissing(b.GPUs[0].PowerW) || b.GPUs[0].Model != "" || b.GPUs[0].DriverVersion != "" {
		t.Errorf("columns the writer did not send must read as not reported: %+v", b.GPUs[0])
	}
}

func TestDecodeNewerWriterUnknownFields(t *testing.T) {
	data, err := NewEncoder().Encode(nil, sampleBatch())
	if err != nil {
		t.Fatal(err)
	}
	// A newer collector adds field 99 (a varint) and field 100 (bytes).
	data = protowire.AppendTag(data, 99, protowire.VarintType)
	data = protowire.AppendVarint(data, 12345)
	data = protowire.AppendTag(data, 100, protowire.BytesType)
	data = protowire.AppendBytes(data, []byte("future"))
	var b SampleBatch
	if err := NewDecoder().Decode(data, &b); err != nil {
		t.Fatalf("unknown fields must be ignored: %v", err)
	}
	equalBatch(t, &b, sampleBatch())
}

func TestDecodeErrors(t *testing.T) {
	base := func() *wirepb.SampleBatch {
		return &wirepb.SampleBatch{SchemaVersion: 1, Node: "n", Dict: []string{"", "GPU-1"},
			Gpus: &wirepb.GPUColumns{TsDeltaMs: []int64{1, 2}, GpuUuid: []uint32{1, 1}}}
	}
	tests := []struct {
		name string
		edit func(*wirepb.SampleBatch)
		want error
	}{
		{"version 0", func(b *wirepb.SampleBatch) { b.SchemaVersion = 0 }, ErrSchemaVersion},
		{"version 2", func(b *wirepb.SampleBatch) { b.SchemaVersion = 2 }, ErrSchemaVersion},
		{"short column", func(b *wirepb.SampleBatch) { b.Gpus.SmActive = []float32{0.5} }, ErrMalformed},
		{"dict out of range", func(b *wirepb.SampleBatch) { b.Gpus.GpuUuid = []uint32{1, 9} }, ErrMalformed},
		{"no uuid column", func(b *wirepb.SampleBatch) { b.Gpus.GpuUuid = nil }, ErrMalformed},
		{"process without pid", func(b *wirepb.SampleBatch) {
			b.Processes = &wirepb.ProcessColumns{TsDeltaMs: []int64{1}, GpuUuid: []uint32{1}}
		}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pb := base()
			tt.edit(pb)
			data, _ := proto.Marshal(pb)
			var b SampleBatch
			if err := NewDecoder().Decode(data, &b); !errors.Is(err, tt.want) {
				t.Fatalf("Decode = %v, want %v", err, tt.want)
			}
		})
	}
	var b SampleBatch
	if err := NewDecoder().Decode([]byte{0xff, 0xff, 0xff}, &b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("garbage: %v", err)
	}
}

func TestValidate(t *testing.T) {
	now := int64(1_796_000_100_000)
	tests := []struct {
		name string
		edit func(*SampleBatch)
		ok   bool
	}{
		{"good", func(*SampleBatch) {}, true},
		{"ratio above 1", func(b *SampleBatch) { b.GPUs[0].SMActive = 1.5 }, false},
		{"negative ratio", func(b *SampleBatch) { b.Processes[0].SMUtil = -0.2 }, false},
		{"rounding slack", func(b *SampleBatch) { b.GPUs[0].GPUUtil = 1.0004 }, true},
		{"infinite power", func(b *SampleBatch) { b.GPUs[0].PowerW = float32(math.Inf(1)) }, false},
		{"power past physics", func(b *SampleBatch) { b.GPUs[0].PowerW = 1e30 }, false},
		{"temperature past physics", func(b *SampleBatch) { b.GPUs[0].TempC = -1e38 }, false},
		{"hot but possible", func(b *SampleBatch) { b.GPUs[0].TempC = 95 }, true},
		{"pcie past physics", func(b *SampleBatch) { b.GPUs[1].PCIeRxBytesPerS = 5e12 }, false},
		{"memory past physics", func(b *SampleBatch) { b.GPUs[0].FBTotalMiB, b.GPUs[0].FBUsedMiB = 1<<30, 0 }, false},
		{"memory above total", func(b *SampleBatch) { b.GPUs[1].FBUsedMiB = 50000 }, false},
		{"far future", func(b *SampleBatch) { b.GPUs[0].TimeMs = now + 2*3600_000 }, false},
		{"zero time", func(b *SampleBatch) { b.Processes[1].TimeMs = 0 }, false},
		{"no node", func(b *SampleBatch) { b.Node = "" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := sampleBatch()
			tt.edit(b)
			err := Validate(b, now, 3600_000)
			if tt.ok != (err == nil) {
				t.Fatalf("Validate = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("error %v is not ErrInvalidValue", err)
			}
			// The columnar check (ingest's) agrees with the row check.
			if b.Node == "" {
				return // the encoder needs no node, but the batch is already refused
			}
			data, encErr := NewEncoder().Encode(nil, b)
			if encErr != nil {
				t.Fatal(encErr)
			}
			pb, decErr := NewDecoder().DecodeColumns(data)
			if decErr != nil {
				t.Fatal(decErr)
			}
			if cerr := ValidateColumns(pb, now, 3600_000); (cerr == nil) != (err == nil) {
				t.Fatalf("ValidateColumns = %v, Validate = %v", cerr, err)
			}
		})
	}
}

func TestJobEventsRoundTrip(t *testing.T) {
	in := &JobEventBatch{Producer: "sim", Seq: 3, Events: []JobEvent{
		{TimeMs: 1, Job: "slurm/c1/9", Event: EventSubmit, Team: "nlp", GPUs: 8, Card: "H100-80GB", Attempt: 2, RerunOf: "slurm/c1/8", Labels: map[string]string{"a": "b"}},
		{TimeMs: 2, Job: "slurm/c1/9", Event: EventEnd, Status: StatusFailed, ExitCode: -9, Nodes: []string{"n1"}, GPUUUIDs: []string{"GPU-1"}},
		{TimeMs: 3, Job: "sched/nlp/1-a1", Event: EventStart, Card: "A100-80GB", MIGProfile: "1g.10gb", MIGInstances: 3, Nodes: []string{"n2"}},
		{TimeMs: 4, Job: "sched/nlp/2-a1", Event: EventStart, Card: "H100-80GB", GPUFraction: 250, Sharing: "mps", Nodes: []string{"n3"}},
	}}
	data, err := EncodeJobEvents(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeJobEvents(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("got %+v, want %+v", out, in)
	}
	bad := &JobEventBatch{Events: []JobEvent{{TimeMs: 1, Job: "j", Event: "explode"}}}
	data, _ = EncodeJobEvents(nil, bad)
	if _, err := DecodeJobEvents(data); !errors.Is(err, ErrInvalidValue) {
		t.Fatalf("unknown event: %v", err)
	}
}

// writeSeeds stores encoded examples as fuzz seeds in testdata (kept in git).
func TestFuzzSeedsCurrent(t *testing.T) {
	data, err := NewEncoder().Encode(nil, sampleBatch())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join("testdata", "sample_batch.bin")
	if *update {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.ReadFile(p); err != nil {
		t.Fatalf("%v (run go test ./schemas -update)", err)
	}
}

func FuzzDecodeSampleBatch(f *testing.F) {
	if seed, err := os.ReadFile(filepath.Join("testdata", "sample_batch.bin")); err == nil {
		f.Add(seed)
	}
	data, _ := NewEncoder().Encode(nil, sampleBatch())
	f.Add(data)
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		var b SampleBatch
		dec := NewDecoder()
		if err := dec.Decode(data, &b); err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSchemaVersion) {
				t.Fatalf("Decode error %v is neither ErrMalformed nor ErrSchemaVersion", err)
			}
			return
		}
		_ = Validate(&b, 0, 0)
		// What decodes re-encodes and decodes to the same batch.
		again, err := NewEncoder().Encode(nil, &b)
		if err != nil {
			return // rows from another node cannot occur: Decode sets none
		}
		var b2 SampleBatch
		if err := NewDecoder().Decode(again, &b2); err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		if len(b2.GPUs) != len(b.GPUs) || len(b2.Processes) != len(b.Processes) {
			t.Fatalf("round trip changed row counts")
		}
	})
}

func FuzzDecodeJobEvents(f *testing.F) {
	data, _ := EncodeJobEvents(nil, &JobEventBatch{Producer: "p", Events: []JobEvent{{TimeMs: 1, Job: "j", Event: EventStart}}})
	f.Add(data)
	data, _ = EncodeJobEvents(nil, &JobEventBatch{Producer: "p", Events: []JobEvent{{TimeMs: 1, Job: "j", Event: EventStart, MIGProfile: "1g.10gb", MIGInstances: 2}}})
	f.Add(data)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeJobEvents(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSchemaVersion) && !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		for i := range b.Events {
			if err := ValidateJobEvent(&b.Events[i]); err != nil {
				t.Fatalf("decoded event fails validation: %v", err)
			}
		}
	})
}
