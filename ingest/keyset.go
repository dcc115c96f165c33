package ingest

import (
	"iter"
	"math/bits"
	"math/rand/v2"
)

// The dedup's stores of keys. A Go map of 128-bit keys costs 50–70 bytes a
// key (a slot of 24 bytes for a 16-byte key and an empty value, a control
// byte, tables kept under 7/8 full and sized up to the next power of two):
// 70–76 MB for the million keys ingest keeps by default. A batch's keys are
// gathered in a keySet (21–32 bytes a key); once it is committed they never
// change again, so they are copied into a keyRun (17 bytes a key) and the
// batch's set is emptied for the next batch. Keys stay whole: two keys are
// the same only if all 128 bits are.

// keyRun is a set of keys that no longer changes: the keys grouped by bucket
// (the top bits of a key's first half), bucket i's being keys[start[i]:start[i+1]],
// about runPerBucket of them. A lookup reads two neighbouring entries of start
// and scans one bucket's keys, which lie side by side.
type keyRun struct {
	keys  []rowKey
	start []uint32
}

// runPerBucket is the keys a keyRun's bucket holds on average: 4 bytes of
// start per runPerBucket keys of 16 bytes, and a bucket's keys fill about a
// cache line.
const runPerBucket = 4

// newKeyRun copies the n keys that each yields (it is called twice and must
// yield the same keys both times) into a run, and adds them to seen on the way
// when that is not nil (one pass over the source the fewer). Two passes over the
// source, not one into a slice sorted in place: moving keys in place waits on
// each key's cache miss in turn (twice the time), and a copy to scatter from
// would take 16 bytes a key more while the run is made.
func newKeyRun(n int, each iter.Seq[rowKey], seen *seenFilter) keyRun {
	nb := max(n/runPerBucket, 1)
	start := make([]uint32, nb+1)
	for k := range each {
		start[bucketOf(k, nb)+1]++
		if seen != nil {
			seen.add(k)
		}
	}
	for i := 1; i <= nb; i++ {
		start[i] += start[i-1]
	}
	// next[i] is where bucket i's next key goes.
	next := make([]uint32, nb)
	copy(next, start)
	keys := make([]rowKey, n)
	for k := range each {
		i := bucketOf(k, nb)
		keys[next[i]] = k
		next[i]++
	}
	return keyRun{keys: keys, start: start}
}

// bucketOf is the bucket of k among nb: the top bits of k.a scaled to nb (the
// Bloom filter in front takes the low bits, so the keys that reach a run are
// not crowded into some buckets).
func bucketOf(k rowKey, nb int) int {
	hi, _ := bits.Mul64(k.a, uint64(nb))
	return int(hi)
}

func (r keyRun) has(k rowKey) bool {
	if len(r.keys) == 0 {
		return false
	}
	i := bucketOf(k, len(r.start)-1)
	for _, x := range r.keys[r.start[i]:r.start[i+1]] {
		if x == k {
			return true
		}
	}
	return false
}

func (r keyRun) len() int { return len(r.keys) }

// bytes is the memory the run holds.
func (r keyRun) bytes() int { return 16*cap(r.keys) + 4*cap(r.start) }

func (r keyRun) all() iter.Seq[rowKey] {
	return func(yield func(rowKey) bool) {
		for _, k := range r.keys {
			if !yield(k) {
				return
			}
		}
	}
}

// keySet is a set of keys that grows: a batch's keys while it is gathered
// and in flight, and the small batches recentKeys gathers. Open addressing
// with linear probing in a table kept at most 3/4 full and grown by half
// (21–32 bytes a key, against 50–70 in a map; a power-of-two table would
// take up to 43). The zero key marks an empty slot, so it is held apart. A
// nil *keySet is empty.
type keySet struct {
	slots []rowKey
	n     int
	zero  bool
	// mult, odd, drawn at each growth, scatters the keys: a key's slot is
	// k.a × mult scaled to the table. Keys are hashes already, but by k.a
	// alone a set would yield its keys in their slots' order, and a set
	// filled in that order from a larger one would pile them into one cluster
	// at each growth (time quadratic in the keys).
	mult uint64
}

// find returns k's slot, or the empty slot where it would go. The table must
// have an empty slot.
func (h *keySet) find(k rowKey) (int, bool) {
	hi, _ := bits.Mul64(k.a*h.mult, uint64(len(h.slots)))
	for i := int(hi); ; {
		switch h.slots[i] {
		case k:
			return i, true
		case rowKey{}:
			return i, false
		}
		if i++; i == len(h.slots) {
			i = 0
		}
	}
}

func (h *keySet) has(k rowKey) bool {
	switch {
	case h == nil:
		return false
	case k == (rowKey{}):
		return h.zero
	case len(h.slots) == 0:
		return false
	}
	_, ok := h.find(k)
	return ok
}

// add puts k in the set.
func (h *keySet) add(k rowKey) {
	if k == (rowKey{}) {
		if !h.zero {
			h.zero = true
			h.n++
		}
		return
	}
	if 4*(h.n+1) > 3*len(h.slots) {
		h.grow()
	}
	if i, ok := h.find(k); !ok {
		h.slots[i] = k
		h.n++
	}
}

// grow makes the table half as large again (from 64 slots).
func (h *keySet) grow() {
	old := h.slots
	h.slots, h.mult = make([]rowKey, max(len(old)*3/2, 64)), rand.Uint64()|1
	for _, k := range old {
		if k != (rowKey{}) {
			i, _ := h.find(k)
			h.slots[i] = k
		}
	}
}

func (h *keySet) len() int {
	if h == nil {
		return 0
	}
	return h.n
}

// reset empties the set and keeps its table: the next batch fills it to about
// the same size without growing it again.
func (h *keySet) reset() {
	if h == nil {
		return
	}
	clear(h.slots)
	h.n, h.zero = 0, false
}

func (h *keySet) all() iter.Seq[rowKey] {
	return func(yield func(rowKey) bool) {
		if h == nil {
			return
		}
		if h.zero && !yield(rowKey{}) {
			return
		}
		for _, k := range h.slots {
			if k != (rowKey{}) && !yield(k) {
				return
			}
		}
	}
}

// keySetOf is a set of keys (tests).
func keySetOf(keys ...rowKey) *keySet {
	ks := &keySet{}
	for _, k := range keys {
		ks.add(k)
	}
	return ks
}
