package ingest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// randomKey is a random key; one in eight is the zero key or shares its first
// half with an earlier one (a crowded bucket, a collision in the hash table),
// when there is one.
func randomKey(r *rand.Rand, earlier []rowKey) rowKey {
	switch {
	case r.IntN(64) == 0:
		return rowKey{}
	case len(earlier) > 0 && r.IntN(8) == 0:
		return rowKey{earlier[r.IntN(len(earlier))].a, r.Uint64()}
	}
	return rowKey{r.Uint64(), r.Uint64()}
}

// keyMap is the plain model of a set of keys.
type keyMap = map[rowKey]struct{}

// TestKeySetAgainstMap: over random adds (repeats, the zero key, keys with the
// same first half) and resets a keySet holds exactly what a map does, through
// its growth.
func TestKeySetAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var h keySet
	for round := range 20 {
		if r.IntN(2) == 0 {
			h = keySet{}
		} else {
			h.reset()
		}
		want := keyMap{}
		var issued []rowKey
		for range r.IntN(5000) {
			k := randomKey(r, issued)
			if len(issued) > 0 && r.IntN(4) == 0 {
				k = issued[r.IntN(len(issued))]
			}
			issued = append(issued, k)
			h.add(k)
			want[k] = struct{}{}
			probe := randomKey(r, issued)
			if _, ok := want[probe]; h.has(probe) != ok {
				t.Fatalf("round %d: has(%v) %t, want %t", round, probe, !ok, ok)
			}
		}
		if h.len() != len(want) {
			t.Fatalf("round %d: %d keys, want %d", round, h.len(), len(want))
		}
		for _, k := range issued {
			if !h.has(k) {
				t.Fatalf("round %d: key %v lost", round, k)
			}
		}
		got := keyMap{}
		for k := range h.all() {
			got[k] = struct{}{}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("round %d: all yields %d keys, want %d", round, len(got), len(want))
		}
	}
}

// TestKeyRunAgainstMap: a run made from a set holds exactly its keys, for sets
// of no key, one key, a crowded bucket and many keys.
func TestKeyRunAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	crowded := keyMap{}
	for i := range 50 {
		crowded[rowKey{7, uint64(i)}] = struct{}{}
	}
	sets := map[string]keyMap{"empty": {}, "one": {{1, 2}: {}}, "zero key": {{}: {}}, "crowded bucket": crowded}
	for _, n := range []int{3, 4, 5, 100, 4097, 30000} {
		ks := keyMap{}
		var issued []rowKey
		for range n {
			k := randomKey(r, issued)
			issued = append(issued, k)
			ks[k] = struct{}{}
		}
		sets[fmt.Sprintf("%d random", n)] = ks
	}
	for name, ks := range sets {
		t.Run(name, func(t *testing.T) {
			run := newKeyRun(len(ks), maps.Keys(ks), nil)
			if run.len() != len(ks) {
				t.Fatalf("%d keys, want %d", run.len(), len(ks))
			}
			for k := range ks {
				if !run.has(k) {
					t.Fatalf("key %v lost", k)
				}
				// Another key in the same bucket, and a key differing in one half only.
				for _, o := range []rowKey{{k.a, k.b + 1}, {k.a + 1, k.b}, {k.a, ^k.b}} {
					if _, ok := ks[o]; run.has(o) != ok {
						t.Fatalf("has(%v) %t, want %t", o, !ok, ok)
					}
				}
			}
			for range 1000 {
				k := rowKey{r.Uint64(), r.Uint64()}
				if _, ok := ks[k]; run.has(k) != ok {
					t.Fatalf("has(%v) %t, want %t", k, !ok, ok)
				}
			}
		})
	}
}

// mapKeys is recentKeys before issue 42: the committed batches' maps, handed
// over and kept, small batches merged into the newest while it is under
// limit/8. It is the plain model recentKeys is checked against (held counts
// each set's keys), and the old store its memory and lookups are measured
// against.
type mapKeys struct {
	limit int
	gens  []keyMap
}

func (m *mapKeys) add(ks keyMap) {
	if m.limit <= 0 || len(ks) == 0 {
		return
	}
	small := max(m.limit/8, 1)
	if n := len(m.gens); len(ks) < small && n > 0 && len(m.gens[n-1]) < small {
		maps.Copy(m.gens[n-1], ks)
	} else {
		m.gens = append(m.gens, ks)
	}
	for len(m.gens) > 1 && m.held() > m.limit {
		m.gens = m.gens[1:]
	}
}

func (m *mapKeys) held() int {
	n := 0
	for _, g := range m.gens {
		n += len(g)
	}
	return n
}

func (m *mapKeys) has(k rowKey) bool {
	for _, g := range m.gens {
		if _, ok := g[k]; ok {
			return true
		}
	}
	return false
}

// TestRecentKeysAgainstMaps: over random sequences of committed batches (small
// and large against the limit, repeating keys of earlier batches, the zero
// key), recentKeys holds exactly the keys of the plain model, in as many sets,
// every batch's map handed back empty, and every key it holds is in its filter.
func TestRecentKeysAgainstMaps(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 30 {
		limit := []int{1, 8, 100, 1000, 5000}[round%5]
		got, want := newRecentKeys(limit), &mapKeys{limit: limit}
		var issued []rowKey
		for step := range 60 {
			size := r.IntN(1 + 2*limit/(1+r.IntN(8)))
			ks, model := &keySet{}, keyMap{}
			for range size {
				k := randomKey(r, issued)
				if len(issued) > 0 && r.IntN(5) == 0 {
					k = issued[r.IntN(len(issued))] // stored before, gathered whole
				}
				issued = append(issued, k)
				ks.add(k)
				model[k] = struct{}{}
			}
			got.add(ks)
			want.add(model)
			if ks.len() != 0 || len(issued) > 0 && ks.has(issued[len(issued)-1]) {
				t.Fatalf("round %d step %d: the batch's set holds %d keys after add", round, step, ks.len())
			}
			if got.held != want.held() || got.sets() != len(want.gens) {
				t.Fatalf("round %d step %d: %d keys in %d sets, want %d in %d", round, step, got.held, got.sets(), want.held(), len(want.gens))
			}
			for _, k := range append(issued[max(len(issued)-3*limit, 0):], rowKey{r.Uint64(), r.Uint64()}) {
				if h := got.has(k); h != want.has(k) || h && !got.seen.mayHave(k) {
					t.Fatalf("round %d step %d: has(%v) %t (filter %t), want %t", round, step, k, h, got.seen.mayHave(k), !h)
				}
			}
		}
	}
}

// TestKeyRunSize: a million keys' run takes at most 17 bytes a key (the
// store's memory, not measured: counted).
func TestKeyRunSize(t *testing.T) {
	ks := make([]rowKey, 1_000_000)
	r := rand.New(rand.NewPCG(9, 10))
	for i := range ks {
		ks[i] = rowKey{r.Uint64(), r.Uint64()}
	}
	run := newKeyRun(len(ks), slices.Values(ks), nil)
	if per := float64(run.bytes()) / float64(len(ks)); per > 17.01 {
		t.Fatalf("%.2f bytes a key, want at most 17", per)
	}
}

// BenchmarkRecentKeysMemory measures the Go heap the committed keys take,
// a million keys in batches of 500,000 (ingest's default batch_rows and
// dedup_rows) and of 100,000: the maps handed over before issue 42 (maps) and
// the runs (runs; each batch gathered in the same keySet, emptied by add). The
// Bloom filter, the same in both, is left out.
func BenchmarkRecentKeysMemory(b *testing.B) {
	const held = 1_000_000
	for _, batch := range []int{500_000, 100_000} {
		name := fmt.Sprintf("batch=%dk", batch/1000)
		b.Run(name+"/maps", func(b *testing.B) {
			for b.Loop() {
				m := &mapKeys{limit: held}
				perKey := heapPerKey(b, held, func(r *rand.Rand) {
					for n := 0; n < held; n += batch {
						ks := make(keyMap, batch)
						for range batch {
							ks[rowKey{r.Uint64(), r.Uint64()}] = struct{}{}
						}
						m.add(ks)
					}
				})
				b.ReportMetric(perKey, "B/key")
				runtime.KeepAlive(m)
			}
		})
		b.Run(name+"/runs", func(b *testing.B) {
			for b.Loop() {
				rk := newRecentKeys(held)
				own := &keySet{} // grown to a batch's size first: not the store's
				for i := range batch {
					own.add(rowKey{uint64(i) + 1, 0})
				}
				own.reset()
				filter := 0
				perKey := heapPerKey(b, held, func(r *rand.Rand) {
					filter -= 8 * len(rk.seen.bits)
					for n := 0; n < held; n += batch {
						for range batch {
							own.add(rowKey{r.Uint64(), r.Uint64()})
						}
						rk.add(own)
					}
					filter += 8 * len(rk.seen.bits)
				})
				b.ReportMetric(perKey-float64(filter)/held, "B/key")
				runtime.KeepAlive(rk)
				runtime.KeepAlive(own)
			}
		})
	}
}

// heapPerKey is the Go heap fill grows by (after a collection each side),
// divided by n.
func heapPerKey(b *testing.B, n int, fill func(*rand.Rand)) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fill(rand.New(rand.NewPCG(11, 12)))
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// BenchmarkRecentKeysHas looks up keys among a million committed ones in two
// batches (no filter in front): held keys (hits, half in each set) and others
// (misses, which look in every set), in the old maps and the runs.
func BenchmarkRecentKeysHas(b *testing.B) {
	const held, batch = 1_000_000, 500_000
	r := rand.New(rand.NewPCG(13, 14))
	m, rk := &mapKeys{limit: held}, newRecentKeys(held)
	var keys []rowKey
	for range held / batch {
		ks, own := make(keyMap, batch), &keySet{}
		for range batch {
			k := rowKey{r.Uint64(), r.Uint64()}
			ks[k] = struct{}{}
			own.add(k)
			keys = append(keys, k)
		}
		m.add(ks)
		rk.add(own)
	}
	others := make([]rowKey, len(keys))
	for i := range others {
		others[i] = rowKey{r.Uint64(), r.Uint64()}
	}
	for _, c := range []struct {
		name string
		has  func(rowKey) bool
	}{{"maps", m.has}, {"runs", rk.has}} {
		for _, look := range []struct {
			name string
			keys []rowKey
			want bool
		}{{"hit", keys, true}, {"miss", others, false}} {
			b.Run(c.name+"/"+look.name, func(b *testing.B) {
				i := 0
				for b.Loop() {
					if c.has(look.keys[i]) != look.want {
						b.Fatal("wrong answer")
					}
					i = (i + 7919) % len(look.keys)
				}
			})
		}
	}
}

// BenchmarkBatchKeysMemory measures the Go heap a batch's keys take while it
// is gathered, 500,000 keys: a map sized for them (as before issue 42) and a
// keySet grown as they come.
func BenchmarkBatchKeysMemory(b *testing.B) {
	const batch = 500_000
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			var ks keyMap
			perKey := heapPerKey(b, batch, func(r *rand.Rand) {
				ks = make(keyMap, batch)
				for range batch {
					ks[rowKey{r.Uint64(), r.Uint64()}] = struct{}{}
				}
			})
			b.ReportMetric(perKey, "B/key")
			runtime.KeepAlive(ks)
		}
	})
	b.Run("keySet", func(b *testing.B) {
		for b.Loop() {
			ks := &keySet{}
			perKey := heapPerKey(b, batch, func(r *rand.Rand) {
				for range batch {
					ks.add(rowKey{r.Uint64(), r.Uint64()})
				}
			})
			b.ReportMetric(perKey, "B/key")
			runtime.KeepAlive(ks)
		}
	})
}
