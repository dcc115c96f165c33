package chdb_test

import (
	"fmt"
	"testing"

	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
	"github.com/gpupool/gpupool/store/storetest"
)

// BenchmarkInsert measures Insert of blocks of rows rows into storetest's table
// of gpupool's column types (several sent narrower than the table's): the
// per-insert cost, the column type check among it, shows at few rows.
func BenchmarkInsert(b *testing.B) {
	for _, rows := range []int{3, 3000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			s := chdbtest.Open(b)
			if err := s.Exec(b.Context(), storetest.AllTypesTable, nil); err != nil {
				b.Fatal(err)
			}
			blk := benchBlock(rows)
			for b.Loop() {
				if err := s.Insert(b.Context(), "t", blk, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// benchBlock is a block of AllTypesTable's columns, n rows.
func benchBlock(n int) *store.Block {
	ts, u16, u32, u64 := store.NewDateTime64Ms("ts"), store.NewUInt16("u16"), store.NewUInt32("u32"), store.NewUInt64("u64")
	i32, f32, nf := store.NewInt32("i32"), store.NewFloat32("f32"), store.NewNullableFloat32("nf")
	s, arr, m := store.NewLowCardinalityString("s"), store.NewStringArray("arr"), store.NewStringMap("m")
	for i := range n {
		ts.Append(int64(i) * 1000)
		u16.Append(uint16(i))
		u32.Append(uint32(i))
		u64.Append(uint64(i))
		i32.Append(int32(-i))
		f32.Append(float32(i))
		nf.Append(float32(i) / 2)
		s.Append(fmt.Sprint("node-", i%16))
		arr.Append([]string{"a", "b"})
		m.Append(map[string]string{"team": "ml"})
	}
	return store.NewBlock(ts, u16, u32, u64, i32, f32, nf, s, arr, m)
}
