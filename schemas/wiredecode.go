package schemas

import (
	"errors"
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/gpupool/gpupool/schemas/wirepb"
)

// errWire is a message that does not parse as protobuf (ErrMalformed wraps it).
var errWire = errors.New("cannot parse the protobuf encoding")

// unmarshalSamples parses data, a SampleBatch, into pb, replacing its contents and
// keeping the capacity of its lists (and its column messages) from the last call.
//
// It is proto.Unmarshal for this one message, written out: protobuf-go allocates
// every packed list anew on each call, even merging into a list with room, and
// ingest decodes every sample message it reads (about 25 lists of 512 values a
// message in the ingest benchmark). It reads what proto.Unmarshal reads, fails where
// it fails, and gives the same message apart from fields this schema does not know,
// which it drops (FuzzUnmarshalSamples compares the two on every input; a
// reflection test checks every field of the schema is read).
func unmarshalSamples(data []byte, pb *wirepb.SampleBatch) error {
	dict := pb.Dict[:0]
	gpus, procs := pb.Gpus, pb.Processes
	pb.Reset()
	pb.Dict = dict
	for len(data) > 0 {
		num, typ, n := consumeTag(data)
		if n < 0 {
			return errWire
		}
		data = data[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(data)
			pb.SchemaVersion = uint32(v)
		case num == 2 && typ == protowire.BytesType:
			n = consumeString(&pb.Cluster, data)
		case num == 3 && typ == protowire.BytesType:
			n = consumeString(&pb.Node, data)
		case num == 4 && typ == protowire.BytesType:
			n = consumeString(&pb.CollectorId, data)
		case num == 5 && typ == protowire.VarintType:
			pb.Seq, n = protowire.ConsumeVarint(data)
		case num == 6 && typ == protowire.BytesType:
			var s string
			if n = consumeString(&s, data); n >= 0 {
				pb.Dict = append(pb.Dict, s)
			}
		case num == 7 && typ == protowire.BytesType:
			if pb.Gpus == nil {
				pb.Gpus = emptyGPUColumns(gpus)
			}
			var b []byte
			if b, n = protowire.ConsumeBytes(data); n >= 0 && unmarshalGPUColumns(b, pb.Gpus) != nil {
				n = -1
			}
		case num == 8 && typ == protowire.BytesType:
			if pb.Processes == nil {
				pb.Processes = emptyProcessColumns(procs)
			}
			var b []byte
			if b, n = protowire.ConsumeBytes(data); n >= 0 && unmarshalProcessColumns(b, pb.Processes) != nil {
				n = -1
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, data)
		}
		if n < 0 {
			return errWire
		}
		data = data[n:]
	}
	return nil
}

// emptyGPUColumns returns c emptied, its lists' capacity kept, or a new one.
func emptyGPUColumns(c *wirepb.GPUColumns) *wirepb.GPUColumns {
	if c == nil {
		return &wirepb.GPUColumns{}
	}
	*c = wirepb.GPUColumns{
		TsDeltaMs: c.TsDeltaMs[:0], GpuUuid: c.GpuUuid[:0], GpuIndex: c.GpuIndex[:0], Model: c.Model[:0],
		Card: c.Card[:0], MigProfile: c.MigProfile[:0], FbTotalMib: c.FbTotalMib[:0], FbUsedMib: c.FbUsedMib[:0],
		GrEngineActive: c.GrEngineActive[:0], SmActive: c.SmActive[:0], SmOccupancy: c.SmOccupancy[:0],
		TensorActive: c.TensorActive[:0], DramActive: c.DramActive[:0], GpuUtil: c.GpuUtil[:0],
		PcieTxBytesPerS: c.PcieTxBytesPerS[:0], PcieRxBytesPerS: c.PcieRxBytesPerS[:0], PowerW: c.PowerW[:0],
		EnergyMillij: c.EnergyMillij[:0], TempC: c.TempC[:0], Xid: c.Xid[:0],
		ClockEventReasons: c.ClockEventReasons[:0], DriverVersion: c.DriverVersion[:0],
	}
	return c
}

// emptyProcessColumns returns c emptied, its lists' capacity kept, or a new one.
func emptyProcessColumns(c *wirepb.ProcessColumns) *wirepb.ProcessColumns {
	if c == nil {
		return &wirepb.ProcessColumns{}
	}
	*c = wirepb.ProcessColumns{
		TsDeltaMs: c.TsDeltaMs[:0], GpuUuid: c.GpuUuid[:0], Pid: c.Pid[:0], ProcessName: c.ProcessName[:0],
		Job: c.Job[:0], FbUsedMib: c.FbUsedMib[:0], SmUtil: c.SmUtil[:0], MemUtil: c.MemUtil[:0],
	}
	return c
}

func unmarshalGPUColumns(b []byte, c *wirepb.GPUColumns) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case 1:
			return consumeSint64s(&c.TsDeltaMs, num, typ, b)
		case 2:
			return consumeUint32s(&c.GpuUuid, num, typ, b)
		case 3:
			return consumeUint32s(&c.GpuIndex, num, typ, b)
		case 4:
			return consumeUint32s(&c.Model, num, typ, b)
		case 5:
			return consumeUint32s(&c.Card, num, typ, b)
		case 6:
			return consumeUint32s(&c.MigProfile, num, typ, b)
		case 7:
			return consumeUint32s(&c.FbTotalMib, num, typ, b)
		case 8:
			return consumeUint32s(&c.FbUsedMib, num, typ, b)
		case 9:
			return consumeFloats(&c.GrEngineActive, num, typ, b)
		case 10:
			return consumeFloats(&c.SmActive, num, typ, b)
		case 11:
			return consumeFloats(&c.SmOccupancy, num, typ, b)
		case 12:
			return consumeFloats(&c.TensorActive, num, typ, b)
		case 13:
			return consumeFloats(&c.DramActive, num, typ, b)
		case 14:
			return consumeFloats(&c.GpuUtil, num, typ, b)
		case 15:
			return consumeFloats(&c.PcieTxBytesPerS, num, typ, b)
		case 16:
			return consumeFloats(&c.PcieRxBytesPerS, num, typ, b)
		case 17:
			return consumeFloats(&c.PowerW, num, typ, b)
		case 18:
			return consumeUint64s(&c.EnergyMillij, num, typ, b)
		case 19:
			return consumeFloats(&c.TempC, num, typ, b)
		case 20:
			return consumeUint32s(&c.Xid, num, typ, b)
		case 21:
			return consumeUint64s(&c.ClockEventReasons, num, typ, b)
		case 22:
			return consumeUint32s(&c.DriverVersion, num, typ, b)
		}
		return protowire.ConsumeFieldValue(num, typ, b)
	})
}

func unmarshalProcessColumns(b []byte, c *wirepb.ProcessColumns) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case 1:
			return consumeSint64s(&c.TsDeltaMs, num, typ, b)
		case 2:
			return consumeUint32s(&c.GpuUuid, num, typ, b)
		case 3:
			return consumeUint32s(&c.Pid, num, typ, b)
		case 4:
			return consumeUint32s(&c.ProcessName, num, typ, b)
		case 5:
			return consumeUint32s(&c.Job, num, typ, b)
		case 6:
			return consumeUint32s(&c.FbUsedMib, num, typ, b)
		case 7:
			return consumeFloats(&c.SmUtil, num, typ, b)
		case 8:
			return consumeFloats(&c.MemUtil, num, typ, b)
		}
		return protowire.ConsumeFieldValue(num, typ, b)
	})
}

// eachField calls field with each field of the message b, which returns the bytes
// the field's value takes, or a negative number where it does not parse.
func eachField(b []byte, field func(num protowire.Number, typ protowire.Type, b []byte) int) error {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errWire
		}
		b = b[n:]
		if n = field(num, typ, b); n < 0 {
			return errWire
		}
		b = b[n:]
	}
	return nil
}

// consumeTag is protowire.ConsumeTag refusing a field number over the largest valid
// one, as proto.Unmarshal does.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	num, typ, n := protowire.ConsumeTag(b)
	if n >= 0 && num > protowire.MaxValidNumber {
		return 0, 0, -1
	}
	return num, typ, n
}

// consumeString reads a string field's value into s; proto3 strings must be UTF-8.
func consumeString(s *string, b []byte) int {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 || !utf8.Valid(v) {
		return -1
	}
	*s = string(v)
	return n
}

// consumeVarints appends a repeated varint field's values, packed or one by one,
// converted by conv; a value of another wire type is an unknown field, skipped.
func consumeVarints[T any](dst *[]T, num protowire.Number, typ protowire.Type, b []byte, conv func(uint64) T) int {
	switch typ {
	case protowire.VarintType:
		v, n := protowire.ConsumeVarint(b)
		if n >= 0 {
			*dst = append(*dst, conv(v))
		}
		return n
	case protowire.BytesType:
		p, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return n
		}
		s := *dst
		for len(p) > 0 {
			if p[0] < 0x80 {
				s = append(s, conv(uint64(p[0])))
				p = p[1:]
				continue
			}
			v, k := protowire.ConsumeVarint(p)
			if k < 0 {
				return k
			}
			s = append(s, conv(v))
			p = p[k:]
		}
		*dst = s
		return n
	}
	return protowire.ConsumeFieldValue(num, typ, b)
}

func consumeUint32s(dst *[]uint32, num protowire.Number, typ protowire.Type, b []byte) int {
	return consumeVarints(dst, num, typ, b, func(v uint64) uint32 { return uint32(v) })
}

func consumeUint64s(dst *[]uint64, num protowire.Number, typ protowire.Type, b []byte) int {
	return consumeVarints(dst, num, typ, b, func(v uint64) uint64 { return v })
}

func consumeSint64s(dst *[]int64, num protowire.Number, typ protowire.Type, b []byte) int {
	return consumeVarints(dst, num, typ, b, protowire.DecodeZigZag)
}

// consumeFloats appends a repeated float field's values, packed or one by one.
func consumeFloats(dst *[]float32, num protowire.Number, typ protowire.Type, b []byte) int {
	switch typ {
	case protowire.Fixed32Type:
		v, n := protowire.ConsumeFixed32(b)
		if n >= 0 {
			*dst = append(*dst, math.Float32frombits(v))
		}
		return n
	case protowire.BytesType:
		p, n := protowire.ConsumeBytes(b)
		if n < 0 || len(p)%4 != 0 {
			return -1
		}
		s := *dst
		for ; len(p) >= 4; p = p[4:] {
			s = append(s, math.Float32frombits(uint32(p[0])|uint32(p[1])<<8|uint32(p[2])<<16|uint32(p[3])<<24))
		}
		*dst = s
		return n
	}
	return protowire.ConsumeFieldValue(num, typ, b)
}
