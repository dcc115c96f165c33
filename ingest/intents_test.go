package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus/bustest"
)

func TestIntentValueRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		state string
		rev   uint64
		seqs  []uint64
		want  string
	}{
		{intentPending, 7, []uint64{1, 2, 3, 5}, "pending|1-3,5"},
		{intentCommitted, 7, []uint64{1, 2, 3, 5}, "committed@7|1-3,5"},
		{intentAborted, 12, []uint64{9}, "aborted@12|9"},
	} {
		in := newIntent("S", tc.seqs)
		in.state, in.rev = tc.state, tc.rev
		got := string(encodeIntent(in))
		if got != tc.want {
			t.Errorf("encode %s: %q, want %q", tc.state, got, tc.want)
		}
		// A pending value takes its revision from the entry; the others carry it.
		back, err := decodeIntent(in.key, []byte(got), 7)
		if err != nil {
			t.Fatal(err)
		}
		if back.state != tc.state || back.rev != tc.rev || !slices.Equal(back.seqs, tc.seqs) || back.first != tc.seqs[0] || back.last != tc.seqs[len(tc.seqs)-1] {
			t.Errorf("decode %q: %+v", got, back)
		}
	}
	// Written before revisions were recorded: committed, and oldest of all.
	old, err := decodeIntent("S.1.3.x", []byte("committed|1-3"), 40)
	if err != nil || old.rev != 0 || !old.committed() {
		t.Errorf("old committed value: %+v, %v", old, err)
	}
	for _, bad := range []string{"", "pending", "done|1", "committed@|1", "committed@x|1", "pending@3|1", "aborted@0|1", "pending|", "pending|3,1", "pending|5-2", "pending|1-99999999999"} {
		if _, err := decodeIntent("S.1.1.x", []byte(bad), 1); err == nil {
			t.Errorf("value %q decoded without error", bad)
		}
	}
}

func FuzzDecodeIntent(f *testing.F) {
	for _, s := range []string{"pending|1-3,5", "committed@7|1-3,5", "aborted@12|9", "committed|1", "pending|1-2,2"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, val []byte) {
		in, err := decodeIntent("S.1.2.x", val, 3)
		if err != nil {
			return
		}
		if len(in.seqs) == 0 || in.first != in.seqs[0] || in.last != in.seqs[len(in.seqs)-1] || !slices.IsSorted(in.seqs) {
			t.Fatalf("decoded %q into %+v", val, in)
		}
		again, err := decodeIntent(in.key, encodeIntent(in), in.rev)
		if err != nil || again.state != in.state || !slices.Equal(again.seqs, in.seqs) {
			t.Fatalf("re-encoding %q: %+v, %v", val, again, err)
		}
	})
}

func TestIntentShared(t *testing.T) {
	a := newIntent("S", []uint64{1, 4, 9})
	for _, tc := range []struct {
		seqs []uint64
		want uint64
	}{{[]uint64{2, 3, 5}, 0}, {[]uint64{5, 9, 10}, 9}, {[]uint64{10, 11}, 0}, {[]uint64{1}, 1}} {
		if got := a.shared(newIntent("S", tc.seqs)); got != tc.want {
			t.Errorf("shared with %v = %d, want %d", tc.seqs, got, tc.want)
		}
	}
}

func newTestIntents(t *testing.T) *intentStore {
	t.Helper()
	b := bustest.Start(t)
	kv, err := b.JS.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "intents_test"})
	if err != nil {
		t.Fatal(err)
	}
	return &intentStore{kv: kv, stream: "S", pruneDelay: 300 * time.Millisecond}
}

func floorAt(f uint64) func(context.Context) (uint64, error) {
	return func(context.Context) (uint64, error) { return f, nil }
}

// TestOlderIntentWins: of two batches holding a message, only the older may be
// inserted, whatever state it is in, and an aborted one stops counting.
func TestOlderIntentWins(t *testing.T) {
	ctx := t.Context()
	s := newTestIntents(t)
	a, err := s.create(ctx, []uint64{10, 11, 12})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.create(ctx, []uint64{12, 13, 14})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.create(ctx, []uint64{15, 16})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.verify(ctx, a, floorAt(9)); err != nil {
		t.Errorf("older batch: %v", err)
	}
	if err := s.verify(ctx, c, floorAt(9)); err != nil {
		t.Errorf("disjoint batch: %v", err)
	}
	if err := s.verify(ctx, b, floorAt(9)); !errors.Is(err, errBeaten) {
		t.Errorf("younger overlapping batch: %v, want beaten", err)
	}
	// Committing the older one keeps its creating revision: still older.
	if err := s.commit(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.verify(ctx, b, floorAt(9)); !errors.Is(err, errBeaten) {
		t.Errorf("after the older one committed: %v, want beaten", err)
	}
	if got, err := s.find(ctx, 12, true); err != nil || got == nil || got.key != a.key || !got.committed() {
		t.Errorf("find 12 = %+v, %v; want the committed older batch", got, err)
	}
	// A message at or below the ack floor was settled already.
	if err := s.verify(ctx, c, floorAt(15)); !errors.Is(err, errBeaten) {
		t.Errorf("batch below the ack floor: %v, want beaten", err)
	}
	// An aborted intent is skipped by find and no longer beats anyone; formed
	// again, the same batch is a new, younger intent.
	if err := s.abort(ctx, b); err != nil {
		t.Fatal(err)
	}
	if got, err := s.find(ctx, 13, true); err != nil || got != nil {
		t.Errorf("find 13 = %+v, %v; want none (its batch was aborted)", got, err)
	}
	again, err := s.create(ctx, []uint64{12, 13, 14})
	if err != nil || again.aborted() || again.rev <= b.rev {
		t.Fatalf("re-formed batch: %+v, %v", again, err)
	}
	d, err := s.create(ctx, []uint64{14, 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.verify(ctx, d, floorAt(9)); !errors.Is(err, errBeaten) {
		t.Errorf("batch overlapping the re-formed one: %v, want beaten", err)
	}
	// abort is compare-and-set: a stale copy does not overwrite a newer state.
	stale := *c
	if err := s.commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.abort(ctx, &stale); err == nil {
		t.Error("abort from a stale read succeeded")
	}
}

// TestPruneWaits: an intent is deleted only once its messages have been below the
// ack floor for the prune delay, and kept if the floor falls back meanwhile.
func TestPruneWaits(t *testing.T) {
	ctx := t.Context()
	s := newTestIntents(t)
	in, err := s.create(ctx, []uint64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.prune(ctx, 5); err != nil || n != 0 {
		t.Fatalf("first prune: %d, %v; want none yet", n, err)
	}
	time.Sleep(400 * time.Millisecond)
	if n, err := s.prune(ctx, 1); err != nil || n != 0 {
		t.Fatalf("prune after the floor fell back: %d, %v; want none", n, err)
	}
	if n, err := s.prune(ctx, 5); err != nil || n != 0 {
		t.Fatalf("prune on seeing it below again: %d, %v; want none", n, err)
	}
	time.Sleep(400 * time.Millisecond)
	if n, err := s.prune(ctx, 5); err != nil || n != 1 {
		t.Fatalf("prune after the delay: %d, %v; want 1", n, err)
	}
	if _, err := s.get(ctx, in.key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("pruned intent still there: %v", err)
	}
	if err := s.recordFloor(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if f, ok, err := s.recordedFloor(ctx); err != nil || !ok || f != 5 {
		t.Errorf("recorded floor %d, %v, %v; want 5", f, ok, err)
	}
	if keys, err := s.keys(ctx, 0); err != nil || len(keys) != 0 {
		t.Errorf("the floor's key is listed among the intents: %v, %v", keys, err)
	}
}

// stallingKV is a bucket whose key listings deliver some keys and then stall, as
// a watcher does whose consumer's servers restarted under it.
type stallingKV struct {
	jetstream.KeyValue
	keys []string
}

type stallingLister struct{ keys chan string }

func (l stallingLister) Keys() <-chan string { return l.keys }
func (l stallingLister) Stop() error         { return nil }

func (kv stallingKV) ListKeysFiltered(ctx context.Context, _ ...string) (jetstream.KeyLister, error) {
	l := stallingLister{keys: make(chan string)}
	go func() {
		defer close(l.keys) // as the library's lister does when ctx ends
		for _, k := range kv.keys {
			select {
			case l.keys <- k:
			case <-ctx.Done():
				return
			}
		}
		<-ctx.Done() // the end of the listing never comes
	}()
	return l, nil
}

// TestIntentListingStalls: a listing that never finishes returns an error after
// the store's timeout, not a partial list taken as the whole (verify would then
// miss an older batch) and not never (ingest's context has no deadline: it
// wedged with its messages held in progress).
func TestIntentListingStalls(t *testing.T) {
	s := &intentStore{kv: stallingKV{keys: []string{"S.1.4", "S.5.9"}}, stream: "S", listTimeout: 50 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		keys, err := s.keys(context.Background(), 0)
		if err == nil {
			err = fmt.Errorf("no error, keys %v", keys)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("stalled listing: %v, want an error wrapping the deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled listing never returned")
	}
	floor := func(context.Context) (uint64, error) { return 0, nil }
	if err := s.verify(context.Background(), newIntent("S", []uint64{3}), floor); err == nil {
		t.Fatal("verify over a stalled listing succeeded")
	}
}

// TestBeatenIntentGone: a beaten batch whose intent is gone already (pruned: its
// messages were settled by another process while the bus restarted) is beaten,
// its messages handed back; it used to be taken for a transient failure and
// retried for ever, the messages held in progress (TestNATSClusterNodeLoss
// wedged on it).
func TestBeatenIntentGone(t *testing.T) {
	ctx := t.Context()
	s := newTestIntents(t)
	if _, err := s.create(ctx, []uint64{10, 11, 12}); err != nil {
		t.Fatal(err)
	}
	young, err := s.create(ctx, []uint64{12, 13})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.kv.Delete(ctx, young.key); err != nil {
		t.Fatal(err)
	}
	p := &pipeline{intents: s}
	if err := p.settleOverlap(ctx, young); !errors.Is(err, errBeaten) {
		t.Fatalf("beaten intent gone from the bucket: %v, want beaten", err)
	}
}

// TestUnsettled: Backlog's floor under the pending counts — the stream's
// sequences past the consumer's ack floor, those its limits removed not
// counted.
func TestUnsettled(t *testing.T) {
	for _, tc := range []struct {
		first, last, floor, want uint64
	}{
		{1, 30, 0, 30},  // a consumer created a moment ago: everything to come
		{1, 30, 30, 0},  // caught up
		{1, 30, 12, 18}, // partly
		{21, 30, 5, 10}, // the first 20 removed by the stream's limits
		{0, 0, 0, 0},    // an empty stream
		{31, 30, 30, 0}, // emptied by its limits after the floor
		{1, 30, 40, 0},  // a floor past the last (never negative)
	} {
		got := unsettled(jetstream.StreamState{FirstSeq: tc.first, LastSeq: tc.last}, tc.floor)
		if got != tc.want {
			t.Errorf("first %d last %d floor %d: %d, want %d", tc.first, tc.last, tc.floor, got, tc.want)
		}
	}
}
