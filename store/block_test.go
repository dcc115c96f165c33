package store_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/gpupool/gpupool/store"
)

// TestLowCardinalityWidths builds columns whose dictionaries end just below, at
// and just past each index width's limit, through every way of appending, and
// reads them back from Values and from the Native encoding.
func TestLowCardinalityWidths(t *testing.T) {
	c := store.NewLowCardinalityString("s")
	for _, distinct := range []int{1, 255, 256, 257, 65536, 65537, 70000} {
		c.Reset()
		var want []string
		dict := []string{"x", "y"}
		for r := 0; len(want) < 3*distinct; r++ {
			k := "k" + strconv.Itoa(r%distinct)
			switch r % 3 {
			case 0:
				c.Append(k)
				want = append(want, k)
			case 1:
				c.AppendN(k, 2)
				want = append(want, k, k)
			default:
				// A message's own dictionary: x, y, then k, repeated.
				c.AppendRefs([]uint32{0, 1, 0}, []string{k, dict[0]}, 3)
				want = append(want, k, "x", k)
			}
		}
		if got := c.Values().([]string); !slices.Equal(got, want) {
			t.Fatalf("%d distinct: Values differ from what was appended (%d against %d rows)", distinct, len(got), len(want))
		}
		if c.Len() != len(want) {
			t.Fatalf("%d distinct: Len %d, want %d", distinct, c.Len(), len(want))
		}
		enc := c.AppendNative(nil)
		if w, want := 1<<(binary.LittleEndian.Uint64(enc[8:])&0xff), widthFor(distinct+1); w != want {
			t.Fatalf("%d distinct: %d bytes a row, want %d", distinct, w, want)
		}
		got, err := decodeLowCardinality(enc)
		if err != nil {
			t.Fatalf("%d distinct: %v", distinct, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d distinct: the Native encoding reads back differently", distinct)
		}
	}
	// The width stays after Reset (4 bytes now), and a small dictionary still
	// reads back.
	c.Reset()
	c.AppendN("only", 3)
	enc := c.AppendNative(nil)
	if w := binary.LittleEndian.Uint64(enc[8:]) & 0xff; w != 2 {
		t.Fatalf("after Reset the index width is %d bytes, want the previous batch's 4", 1<<w)
	}
	if got, err := decodeLowCardinality(enc); err != nil || !slices.Equal(got, []string{"only", "only", "only"}) {
		t.Fatalf("a one-key dictionary at 4 bytes a row reads back %q, %v", got, err)
	}
	// A fresh column of few keys takes a byte a row.
	d := store.NewLowCardinalityString("d")
	d.AppendN("a", 10)
	if w := binary.LittleEndian.Uint64(d.AppendNative(nil)[8:]) & 0xff; w != 0 {
		t.Fatalf("a one-key column takes %d bytes a row", 1<<w)
	}
}

// widthFor is the smallest index width, in bytes, for a dictionary of n keys.
func widthFor(n int) int {
	switch {
	case n <= 1<<8:
		return 1
	case n <= 1<<16:
		return 2
	}
	return 4
}

// decodeLowCardinality reads one granule of ClickHouse's LowCardinality(String)
// Native serialization as AppendNative writes it.
func decodeLowCardinality(b []byte) ([]string, error) {
	u64 := func() (uint64, error) {
		if len(b) < 8 {
			return 0, strconv.ErrSyntax
		}
		v := binary.LittleEndian.Uint64(b)
		b = b[8:]
		return v, nil
	}
	if v, err := u64(); err != nil || v != 1 {
		return nil, strconv.ErrSyntax
	}
	flags, err := u64()
	if err != nil {
		return nil, err
	}
	nkeys, err := u64()
	if err != nil {
		return nil, err
	}
	keys := make([]string, nkeys)
	for i := range keys {
		n, k := binary.Uvarint(b)
		if k <= 0 || len(b) < k+int(n) {
			return nil, strconv.ErrSyntax
		}
		keys[i], b = string(b[k:k+int(n)]), b[k+int(n):]
	}
	rows, err := u64()
	if err != nil {
		return nil, err
	}
	w := 1 << (flags & 0xff)
	if uint64(len(b)) != rows*uint64(w) {
		return nil, strconv.ErrSyntax
	}
	out := make([]string, rows)
	for r := range out {
		var i uint64
		switch w {
		case 1:
			i = uint64(b[r])
		case 2:
			i = uint64(binary.LittleEndian.Uint16(b[2*r:]))
		default:
			i = uint64(binary.LittleEndian.Uint32(b[4*r:]))
		}
		if i >= nkeys {
			return nil, strconv.ErrRange
		}
		out[r] = keys[i]
	}
	if nkeys > 1<<(8*w) && w < 4 {
		return nil, strconv.ErrRange // the dictionary cannot be indexed at this width
	}
	return out, nil
}

// TestWriteNativeStreams checks that the block written a column at a time, with
// the fixed-width columns handing over their own memory, is byte for byte the
// block's AppendNative encoding, with NULLs, empty blocks and every column type.
func TestWriteNativeStreams(t *testing.T) {
	for _, rows := range []int{0, 1, 7, 1000} {
		for _, nulls := range []bool{false, true} {
			u16, u32, u64 := store.NewUInt16("a"), store.NewUInt32("b"), store.NewUInt64("c")
			i32, f32, str := store.NewInt32("d"), store.NewFloat32("e"), store.NewString("f")
			ts, nf, lc := store.NewDateTime64Ms("g"), store.NewNullableFloat32("h"), store.NewLowCardinalityString("i")
			arr, m := store.NewStringArray("j"), store.NewStringMap("k")
			for r := range rows {
				u16.Append(uint16(r * 7))
				u32.Append(uint32(r) * 65537)
				u64.Append(uint64(r) << 40)
				i32.Append(int32(-r))
				f32.Append(float32(r) / 3)
				str.Append(strconv.Itoa(r))
				ts.Append(1_700_000_000_000 + int64(r))
				v := float32(r) / 7
				if nulls && r%3 == 1 {
					v = float32(math.NaN())
				}
				nf.Append(v)
				lc.Append("k" + strconv.Itoa(r%300))
				arr.Append([]string{"x", strconv.Itoa(r)})
				m.Append(map[string]string{"team": strconv.Itoa(r % 5)})
			}
			b := store.NewBlock(u16, u32, u64, i32, f32, str, ts, nf, lc, arr, m)
			want, err := b.AppendNative(nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			chunks := 0
			if _, err := b.WriteNative(nil, func(c []byte) error {
				got = append(got, c...)
				chunks++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%d rows, NULLs %v: the streamed block differs from AppendNative's", rows, nulls)
			}
			if rows > 0 && chunks <= len(b.Columns) {
				t.Fatalf("%d rows: %d chunks, so no column handed over its own memory", rows, chunks)
			}
		}
	}
}
