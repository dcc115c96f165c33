package schemas

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gpupool/gpupool/schemas/wirepb"
)

// FuzzUnmarshalSamples decodes two messages with one decoder and checks the second
// against proto.Unmarshal: the same error or none, the same message but for fields
// the schema does not know — so nothing of the first message, whose lists the
// decoder reuses, is left behind.
func FuzzUnmarshalSamples(f *testing.F) {
	if seed, err := os.ReadFile(filepath.Join("testdata", "sample_batch.bin")); err == nil {
		f.Add(seed, seed)
	}
	full, _ := NewEncoder().Encode(nil, sampleBatch())
	gpuOnly := sampleBatch()
	gpuOnly.Processes = nil
	g, _ := NewEncoder().Encode(nil, gpuOnly)
	procOnly := sampleBatch()
	procOnly.GPUs = nil
	p, _ := NewEncoder().Encode(nil, procOnly)
	every := everyField(f)
	// An empty gpus message; a field this schema does not know inside it; a column
	// field sent unpacked; a column message's number with another wire type.
	emptyGPUs := protowire.AppendBytes(protowire.AppendTag([]byte{0x08, 0x01}, 7, protowire.BytesType), nil)
	unknown := protowire.AppendBytes(protowire.AppendTag([]byte{0x08, 0x01}, 7, protowire.BytesType),
		protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))
	unpacked := protowire.AppendTag(nil, 2, protowire.VarintType)
	unpacked = protowire.AppendVarint(unpacked, 3)
	unpacked = protowire.AppendFixed32(protowire.AppendTag(unpacked, 9, protowire.Fixed32Type), 0x3f000000)
	unpacked = protowire.AppendBytes(protowire.AppendTag([]byte{0x08, 0x01}, 8, protowire.BytesType), unpacked)
	otherType := []byte{0x08, 0x01, 0x38, 0x30}
	seeds := [][]byte{full, g, p, every, emptyGPUs, unknown, unpacked, otherType, {}, {0x3a, 0x05}}
	for _, a := range seeds {
		for _, b := range seeds {
			f.Add(a, b)
		}
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		var got wirepb.SampleBatch
		_ = unmarshalSamples(first, &got)
		err := unmarshalSamples(second, &got)
		var want wirepb.SampleBatch
		werr := proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(second, &want)
		if (err == nil) != (werr == nil) {
			t.Fatalf("after another message unmarshalSamples says %v, proto.Unmarshal %v", err, werr)
		}
		if err != nil {
			return
		}
		if !proto.Equal(&got, &want) {
			t.Fatalf("after another message unmarshalSamples gives\n%v\nproto.Unmarshal gives\n%v", &got, &want)
		}
		if (got.Gpus == nil) != (want.Gpus == nil) || (got.Processes == nil) != (want.Processes == nil) {
			t.Fatalf("column messages set %v/%v, proto.Unmarshal %v/%v", got.Gpus != nil, got.Processes != nil, want.Gpus != nil, want.Processes != nil)
		}
	})
}

// everyField is a SampleBatch with two values in every field the schema has, set
// through reflection: a field added to gpupool.proto and not to unmarshalSamples
// fails TestUnmarshalSamplesEveryField.
func everyField(t testing.TB) []byte {
	t.Helper()
	var fill func(m protoreflect.Message)
	fill = func(m protoreflect.Message) {
		fds := m.Descriptor().Fields()
		for i := range fds.Len() {
			fd := fds.Get(i)
			switch {
			case fd.Message() != nil:
				fill(m.Mutable(fd).Message())
			case fd.IsList():
				l := m.Mutable(fd).List()
				for k := range 2 {
					l.Append(sampleValue(fd, k+int(fd.Number())))
				}
			default:
				m.Set(fd, sampleValue(fd, int(fd.Number())))
			}
		}
	}
	var pb wirepb.SampleBatch
	fill(pb.ProtoReflect())
	data, err := proto.Marshal(&pb)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func sampleValue(fd protoreflect.FieldDescriptor, k int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("s" + string(rune('a'+k%26)))
	case protoreflect.Uint32Kind:
		return protoreflect.ValueOfUint32(uint32(300 * k))
	case protoreflect.Uint64Kind:
		return protoreflect.ValueOfUint64(uint64(1) << (k % 60))
	case protoreflect.Sint64Kind:
		return protoreflect.ValueOfInt64(-int64(k) * 1000)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(k) / 8)
	}
	panic("sampleValue: no value for a field of kind " + fd.Kind().String() + ": add it, and its decoding")
}

func TestUnmarshalSamplesEveryField(t *testing.T) {
	data := everyField(t)
	var got, want wirepb.SampleBatch
	if err := unmarshalSamples(data, &got); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, &want) {
		t.Fatalf("unmarshalSamples reads\n%v\nproto.Unmarshal\n%v", &got, &want)
	}
	// Decoding again reuses the lists and gives the same message.
	if err := unmarshalSamples(data, &got); err != nil || !proto.Equal(&got, &want) {
		t.Fatalf("a second decode into the same message gives %v (err %v)", &got, err)
	}
}

// BenchmarkDecodeColumns decodes a message of 8 GPUs and 64 processes per GPU (the
// ingest benchmark's) with one decoder, as ingest does, against proto.Unmarshal into
// one message (what DecodeColumns did before unmarshalSamples).
func BenchmarkDecodeColumns(b *testing.B) {
	batch := &SampleBatch{Cluster: "c1", Node: "n1"}
	for g := range 8 {
		uuid := "GPU-" + string(rune('a'+g))
		batch.GPUs = append(batch.GPUs, GPUSample{TimeMs: 1_700_000_000_000, GPUUUID: uuid, Card: "H100-80GB", FBTotalMiB: 81559,
			GrEngineActive: 0.5, SMActive: 0.4, SMOccupancy: 0.3, TensorActive: 0.2, DRAMActive: 0.1, GPUUtil: 0.9,
			PCIeTxBytesPerS: 1e6, PCIeRxBytesPerS: 2e6, PowerW: 300, EnergyMilliJ: 1e9, TempC: 50})
		for p := range 64 {
			batch.Processes = append(batch.Processes, ProcessSample{TimeMs: 1_700_000_000_000, GPUUUID: uuid, PID: uint32(1000 + p),
				ProcessName: "python3", Job: "k8s/ns/job-" + uuid, FBUsedMiB: 1000, SMUtil: 0.3, MemUtil: 0.2})
		}
	}
	data, err := NewEncoder().Encode(nil, batch)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decoder", func(b *testing.B) {
		dec := NewDecoder()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := dec.DecodeColumns(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proto.Unmarshal", func(b *testing.B) {
		var pb wirepb.SampleBatch
		b.ReportAllocs()
		for b.Loop() {
			if err := proto.Unmarshal(data, &pb); err != nil {
				b.Fatal(err)
			}
		}
	})
}
