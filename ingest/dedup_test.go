package ingest

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// keysOf returns n keys of one series, at times from+0 … from+n-1.
func keysOf(d *dedup, node string, from, n int) []rowKey {
	s := d.series("c1", node, "GPU-0")
	ks := make([]rowKey, n)
	for i := range ks {
		ks[i] = d.row(s, int64(from+i), 0, false)
	}
	return ks
}

func TestJudgeRepeats(t *testing.T) {
	recent := newRecentKeys(100)
	d := newDedup(recent)
	stored := keysOf(d, "n", 0, 3)
	recent.add(keySetOf(stored...))
	flight := keysOf(d, "n", 100, 2)
	other := newDedup(recent) // the batch being inserted: another dedup sharing recent
	if err := other.judge([]*judged{{table: "gpu_samples", keys: flight}}, false); err != nil {
		t.Fatal(err)
	}
	d.setInflight(other.keys())

	// New rows, one of them twice in the message: the repeat is dropped.
	fresh := keysOf(d, "n", 10, 2)
	j := &judged{table: "gpu_samples", keys: []rowKey{fresh[0], fresh[1], fresh[0]}}
	if err := d.judge([]*judged{j}, false); err != nil || j.drop != 1 || !j.keep[0] || !j.keep[1] || j.keep[2] {
		t.Fatalf("repeat within the message: err %v, drop %d, keep %v", err, j.drop, j.keep)
	}
	// The same rows again in the batch: all dropped, the message stays in it.
	j = &judged{table: "gpu_samples", keys: fresh}
	if err := d.judge([]*judged{j}, false); err != nil || j.drop != 2 {
		t.Fatalf("repeat of the batch: err %v, drop %d", err, j.drop)
	}
	// A row of the batch in flight: the message is handed back, and its new row
	// is not taken as the batch's.
	late := keysOf(d, "n", 20, 1)
	j = &judged{table: "gpu_samples", keys: []rowKey{late[0], flight[1]}}
	if err := d.judge([]*judged{j}, false); !errors.Is(err, errHandBack) {
		t.Fatalf("repeat of the batch in flight: %v, want errHandBack", err)
	}
	if d.own.has(late[0]) {
		t.Fatal("a handed-back message's row was taken as the batch's")
	}
	// Every row stored (one also in this batch): acknowledged outside the batch,
	// counted by table.
	g := &judged{table: "gpu_samples", keys: stored[:2]}
	p := &judged{table: "process_samples", keys: []rowKey{stored[2], fresh[0]}}
	var rep *repeatError
	if err := d.judge([]*judged{g, p}, false); !errors.As(err, &rep) || rep.rows["gpu_samples"] != 2 || rep.rows["process_samples"] != 2 {
		t.Fatalf("repeat of stored rows: %v (%+v), want a repeatError of 2 and 2 rows", err, rep)
	}
	// New rows beside stored ones: gathered whole, so that a recovery rebuilding
	// the batch from the stream gets the same rows.
	j = &judged{table: "gpu_samples", keys: []rowKey{late[0], stored[0]}}
	if err := d.judge([]*judged{j}, false); err != nil || j.drop != 0 || j.keep != nil {
		t.Fatalf("new rows beside stored ones: err %v, drop %d, keep %v", err, j.drop, j.keep)
	}
	// The Loader (no intents): the stored row is dropped, the new one kept.
	d2 := newDedup(recent)
	j = &judged{table: "gpu_samples", keys: []rowKey{late[0], stored[0]}}
	if err := d2.judge([]*judged{j}, true); err != nil || j.drop != 1 || !j.keep[0] || j.keep[1] {
		t.Fatalf("row level: err %v, drop %d, keep %v", err, j.drop, j.keep)
	}
	// Nothing to judge: an empty message is not a repeat.
	if err := newDedup(recent).judge([]*judged{{table: "gpu_samples"}}, false); err != nil {
		t.Fatalf("empty message: %v", err)
	}
}

// TestRowKeysTellRowsApart: the keys of rows that differ in one field of the key
// differ (GPU against process row, PID, time, node, GPU).
func TestRowKeysTellRowsApart(t *testing.T) {
	d := newDedup(nil)
	a, b := d.series("c1", "n1", "GPU-0"), d.series("c1", "n1", "GPU-1")
	seen := map[rowKey]string{}
	for _, c := range []struct {
		name string
		k    rowKey
	}{
		{"gpu row", d.row(a, 1000, 0, false)},
		{"process row pid 0", d.row(a, 1000, 0, true)},
		{"process row pid 1", d.row(a, 1000, 1, true)},
		{"next ms", d.row(a, 1001, 0, false)},
		{"other gpu", d.row(b, 1000, 0, false)},
		{"other node", d.row(d.series("c1", "n2", "GPU-0"), 1000, 0, false)},
		{"node and gpu run together", d.row(d.series("c1", "n1G", "PU-0"), 1000, 0, false)},
	} {
		if o, ok := seen[c.k]; ok {
			t.Errorf("%s has the key of %s", c.name, o)
		}
		seen[c.k] = c.name
	}
}

// TestSeenFilterNeverHidesAKey: over random messages, batches committed and
// handed over as the batch in flight, the filter's fast path never calls a
// held key new: every verdict equals the one the key sets alone give, through
// the filter's rebuilds (it starts small and grows).
func TestSeenFilterNeverHidesAKey(t *testing.T) {
	recent := newRecentKeys(4000)
	a, b := newDedup(recent), newDedup(recent)
	cur, spare := a, b
	r := rand.New(rand.NewPCG(1, 2))
	var issued []rowKey
	exact := func(d *dedup, k rowKey) int {
		switch {
		case d.own.has(k):
			return keyOwn
		case d.inflight.has(k):
			return keyFlight
		case recent.has(k):
			return keyStored
		}
		return keyNew
	}
	rebuilds, fast := 0, 0
	for step := range 3000 {
		keys := make([]rowKey, 1+r.IntN(40))
		for i := range keys {
			if len(issued) > 0 && r.IntN(4) == 0 {
				keys[i] = issued[r.IntN(len(issued))]
			} else {
				keys[i] = rowKey{r.Uint64(), r.Uint64()}
				issued = append(issued, keys[i])
			}
		}
		for _, k := range keys {
			want := exact(cur, k)
			if got := cur.verdict(k, nil); got != want {
				t.Fatalf("step %d: verdict %d, want %d", step, got, want)
			}
			if !recent.seen.mayHave(k) {
				fast++
			}
		}
		before := recent.seen.set
		_ = cur.judge([]*judged{{table: "t", keys: keys}}, false)
		if r.IntN(10) == 0 { // a flush: the batch goes in flight, the spare is settled
			if r.IntN(5) > 0 {
				recent.add(spare.keys())
			}
			cur.setInflight(nil)
			spare.clearKeys()
			cur, spare = spare, cur
			cur.setInflight(spare.keys())
		}
		if recent.seen.set < before {
			rebuilds++
		}
	}
	if rebuilds == 0 || fast == 0 {
		t.Fatalf("rebuilds %d, fast verdicts %d: the filter was not exercised", rebuilds, fast)
	}
}

// TestRecentKeysGenerations: committed batches are kept whole, oldest
// forgotten first once more than the limit is held (the newest always kept);
// batches under an eighth of the limit are gathered into one set.
func TestRecentKeysGenerations(t *testing.T) {
	r := newRecentKeys(100)
	d := newDedup(r)
	batch := func(from, n int) *keySet { return keySetOf(keysOf(d, "n", from, n)...) }
	r.add(batch(0, 60))
	r.add(batch(100, 60)) // 120 held: the first batch goes
	if r.has(keysOf(d, "n", 0, 1)[0]) || !r.has(keysOf(d, "n", 100, 1)[0]) || r.held != 60 || r.sets() != 1 {
		t.Fatalf("held %d in %d sets: want the second batch only", r.held, r.sets())
	}
	r.add(batch(200, 150)) // larger than the limit alone: kept, the older dropped
	if r.held != 150 || !r.has(keysOf(d, "n", 349, 1)[0]) || r.has(keysOf(d, "n", 100, 1)[0]) {
		t.Fatalf("held %d: want the newest batch of 150", r.held)
	}
	for i := range 10 { // small batches gather into one set
		r.add(batch(1000+10*i, 5))
	}
	// 5 each, an eighth of the limit is 12: sets of 15, 15, 15 and 5.
	if r.sets() != 4 || r.held != 50 || !r.has(keysOf(d, "n", 1094, 1)[0]) || !r.has(keysOf(d, "n", 1000, 1)[0]) {
		t.Fatalf("%d sets, %d held after ten small batches", r.sets(), r.held)
	}
	r.add(&keySet{})
	r.add(nil)
	var nilRecent *recentKeys
	if nilRecent.has(keysOf(d, "n", 0, 1)[0]) {
		t.Fatal("a nil recent holds a key")
	}
}
