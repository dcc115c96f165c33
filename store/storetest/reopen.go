package storetest

import (
	"errors"
	"testing"

	"github.com/gpupool/gpupool/store"
)

// testDataSurvivesReopen: a closed store refuses work with store.ErrClosed, and a
// store opened again on its database finds the rows written before.
func testDataSurvivesReopen(t *testing.T, b Backend) {
	ctx := t.Context()
	s := b.open(t, "CREATE TABLE kept (x UInt32) ENGINE = MergeTree ORDER BY x", "INSERT INTO kept VALUES (7)")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "SELECT 1", nil); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Exec after Close: err = %v, want ErrClosed", err)
	}
	s2 := b.Reopen(t, s, false) // the database exists now: opening must not mind
	res, err := s2.Query(ctx, "SELECT sum(x) AS x FROM kept", nil)
	if err != nil {
		t.Fatal(err)
	}
	if x, _ := res.Int(0, "x"); x != 7 {
		t.Fatalf("after reopen sum(x) = %d, want 7", x)
	}
}

// testReadOnly: a read-only store on a database reads it and cannot write to it.
func testReadOnly(t *testing.T, b Backend) {
	ctx := t.Context()
	s := b.open(t, "CREATE TABLE r (x UInt32) ENGINE = MergeTree ORDER BY x")
	ro := b.Reopen(t, s, true)
	if err := ro.Exec(ctx, "INSERT INTO r VALUES (1)", nil); err == nil {
		t.Fatal("insert through a read-only store succeeded")
	}
	if _, err := ro.Query(ctx, "SELECT count() FROM r", nil); err != nil {
		t.Fatalf("read through a read-only store: %v", err)
	}
}
