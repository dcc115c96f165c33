package pricebook

import (
	"strings"
	"testing"
	"time"
)

func TestLoadIdempotent(t *testing.T) {
	s := openStore(t)
	ctx := t.Context()
	example, err := Read("")
	if err != nil {
		t.Fatal(err)
	}
	if empty, err := Empty(ctx, s); err != nil || !empty {
		t.Fatalf("Empty before a load = %v, %v", empty, err)
	}
	if res, err := Load(ctx, s, example); err != nil || res.Inserted != len(example) {
		t.Fatalf("loading the example: %+v, %v", res, err)
	}
	rows, err := Parse(strings.NewReader("H100-80GB,2025-01-01,,3.2,USD,example list price\nH100-80GB,2026-04-01,,2.9,USD,it's cheaper\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Load(ctx, s, rows)
	if err != nil || res.Inserted != 1 || res.Unchanged != 1 {
		t.Fatalf("first load: %+v, %v; want 1 inserted (the new price), 1 unchanged", res, err)
	}
	res, err = Load(ctx, s, rows)
	if err != nil || res.Inserted != 0 || res.Unchanged != 2 {
		t.Fatalf("second load: %+v, %v; want nothing inserted", res, err)
	}
	q, err := s.Query(ctx, "SELECT count() AS n, countIf(note = 'it''s cheaper') AS quoted FROM price_book", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := q.Int(0, "n"); n != int64(len(example))+1 {
		t.Errorf("price_book has %d rows, want the example's %d and one more", n, len(example))
	}
	if n, _ := q.Int(0, "quoted"); n != 1 {
		t.Error("a note with a quote did not survive")
	}
	if empty, err := Empty(ctx, s); err != nil || empty {
		t.Errorf("Empty = %v, %v", empty, err)
	}
	p, cur, err := New(s).PricePerGPUHour(ctx, "H100-80GB", time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || p != 2.9 || cur != "USD" {
		t.Errorf("price after the load: %v %s %v", p, cur, err)
	}
}
