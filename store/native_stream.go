package store

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// nativeStreamer is a column that writes its Native encoding through emit itself,
// handing over its own memory where it is already laid out as Native wants it
// (fixed-width values, little-endian), so that inserting a block builds no encoded
// copy of it. buf holds the column's header, not yet emitted; the column appends
// to it, emits it and whatever else it has, and returns it for reuse.
type nativeStreamer interface {
	streamNative(buf []byte, emit func([]byte) error) ([]byte, error)
}

// hostLittleEndian: Go values in memory are laid out as Native writes them.
var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// rawBytes is the memory of a slice of fixed-width values.
func rawBytes[T uint8 | uint16 | uint32 | uint64 | int32 | int64 | float32 | float64](vs []T) []byte {
	if len(vs) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vs))), len(vs)*int(unsafe.Sizeof(zero)))
}

// emitRaw emits buf, then raw when there is any.
func emitRaw(buf, raw []byte, emit func([]byte) error) ([]byte, error) {
	if err := emit(buf); err != nil {
		return buf, err
	}
	if len(raw) == 0 {
		return buf, nil
	}
	return buf, emit(raw)
}

func (c *col[T]) streamNative(buf []byte, emit func([]byte) error) ([]byte, error) {
	if c.raw == nil || !hostLittleEndian {
		buf = c.AppendNative(buf)
		return buf, emit(buf)
	}
	return emitRaw(buf, c.raw(c.Data), emit)
}

func (c *DateTime64MsCol) streamNative(buf []byte, emit func([]byte) error) ([]byte, error) {
	if !hostLittleEndian {
		buf = c.AppendNative(buf)
		return buf, emit(buf)
	}
	return emitRaw(buf, rawBytes(c.Data), emit)
}

// streamNative writes the null map into buf, then the values as they are held,
// unless one is NaN (NULL): those are written as 0, as AppendNative does.
func (c *NullableFloat32Col) streamNative(buf []byte, emit func([]byte) error) ([]byte, error) {
	nulls := false
	for _, v := range c.Data {
		if v != v {
			buf, nulls = append(buf, 1), true
		} else {
			buf = append(buf, 0)
		}
	}
	if nulls || !hostLittleEndian {
		for _, v := range c.Data {
			if v != v {
				v = 0
			}
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		return buf, emit(buf)
	}
	return emitRaw(buf, rawBytes(c.Data), emit)
}

// streamNative writes the dictionary into buf, then the indexes as they are held
// (they are kept at the width Native reads).
func (c *LowCardinalityStringCol) streamNative(buf []byte, emit func([]byte) error) ([]byte, error) {
	buf = c.appendNativeHeader(buf)
	return emitRaw(buf, c.idx, emit)
}
