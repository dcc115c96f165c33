package store_test

import (
	"errors"
	"testing"

	"github.com/gpupool/gpupool/store"
)

func TestTypeFits(t *testing.T) {
	tests := []struct {
		from, to string
		want     bool
	}{
		{"UInt16", "UInt16", true},
		{"UInt16", "UInt32", true},
		{"UInt16", "Float32", true},
		{"UInt32", "UInt64", true},
		{"UInt32", "Int64", true},
		{"UInt32", "Float64", true},
		{"Int32", "Int64", true},
		{"Float32", "Float64", true},
		{"UInt8", "UInt16", true},
		{"String", "LowCardinality(String)", true},
		{"LowCardinality(String)", "String", true},
		{"String", "Nullable(String)", true},
		{"Float32", "Nullable(Float64)", true},
		{"Nullable(Float32)", "Nullable(Float32)", true},
		{"Nullable(Float32)", "Nullable(Float64)", true},
		{"String", "LowCardinality(Nullable(String))", true},
		{"Array(String)", "Array(LowCardinality(String))", true},
		{"LowCardinality(String)", "SimpleAggregateFunction(any, LowCardinality(String))", true},
		{"UInt32", "SimpleAggregateFunction(sum, UInt64)", true},
		{"Nullable(Float32)", "SimpleAggregateFunction(max, Nullable(Float32))", true},
		{"Map(String, String)", "Map(LowCardinality(String), String)", true},
		{"Map(String, Float32)", "Map(String, Float64)", true},
		{"DateTime('UTC')", "DateTime", true},
		{"DateTime('UTC')", "DateTime64(3, 'UTC')", true},
		{"DateTime64(3, 'UTC')", "DateTime64(6, 'Europe/Paris')", true},
		{"Nullable(DateTime64(3, 'UTC'))", "Nullable(DateTime64(3, 'UTC'))", true},

		{"UInt32", "UInt16", false},
		{"UInt16", "UInt8", false},
		{"UInt64", "Int64", false},
		{"UInt64", "Float64", false},
		{"UInt32", "Int32", false},
		{"UInt32", "Float32", false},
		{"Int32", "UInt32", false},
		{"Int32", "UInt64", false},
		{"Float64", "Float32", false},
		{"Float32", "UInt32", false},
		{"Nullable(Float32)", "Float32", false},
		{"Nullable(Float32)", "Nullable(Float16)", false},
		{"String", "UUID", false},
		{"String", "FixedString(4)", false},
		{"UInt32", "String", false},
		{"Array(String)", "String", false},
		{"UInt64", "SimpleAggregateFunction(sum, UInt32)", false},
		{"UInt64", "AggregateFunction(sum, UInt64)", false},
		{"Array(UInt32)", "Array(UInt16)", false},
		{"Map(String, Float64)", "Map(String, Float32)", false},
		{"Map(String, String)", "Array(String)", false},
		{"DateTime64(3, 'UTC')", "DateTime('UTC')", false},
		{"DateTime64(6, 'UTC')", "DateTime64(3, 'UTC')", false},
		{"DateTime64(3, 'UTC')", "Date", false},
		{"Int64", "DateTime64(3)", false},
	}
	for _, tt := range tests {
		if got := store.TypeFits(tt.from, tt.to); got != tt.want {
			t.Errorf("TypeFits(%q, %q) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestCheckInsertTypeNamesColumnAndTypes(t *testing.T) {
	err := store.CheckInsertType(store.NewUInt32("c"), "UInt16")
	if !errors.Is(err, store.ErrNarrowing) || err.Error() != "column c (UInt32 into UInt16): "+store.ErrNarrowing.Error() {
		t.Fatalf("err = %v, want ErrNarrowing naming column c, UInt32 and UInt16", err)
	}
	if err := store.CheckInsertType(store.NewUInt16("c"), "LowCardinality(Nullable(UInt32))"); err != nil {
		t.Fatalf("UInt16 into LowCardinality(Nullable(UInt32)): %v", err)
	}
}
