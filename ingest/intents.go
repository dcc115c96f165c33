package ingest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Intent states.
const (
	intentPending   = "pending"
	intentCommitted = "committed"
	// intentAborted marks a batch that must never be inserted: it shares a message
	// with an older intent, or holds a message already acknowledged (see verify).
	intentAborted = "aborted"
)

// intent records which stream messages one insert holds, before the insert, so that
// a redelivered message can be traced to its batch (see the package comment).
type intent struct {
	// key names the batch: <stream>.<first seq>.<last seq>.<hash of all seqs>. It is
	// also the base of the insert deduplication tokens.
	key   string
	first uint64
	last  uint64
	seqs  []uint64 // sorted
	state string
	// rev is the bucket revision that created the intent: of two intents sharing a
	// message, only the older (lower rev) may ever be inserted. It is written into
	// the value when the state changes, since every write moves the entry's revision.
	rev uint64
	// entryRev is the entry's revision as last read or written, for compare-and-set.
	entryRev uint64
}

func (in *intent) committed() bool { return in.state == intentCommitted }

func (in *intent) aborted() bool { return in.state == intentAborted }

func (in *intent) contains(seq uint64) bool {
	if seq < in.first || seq > in.last {
		return false
	}
	_, ok := slices.BinarySearch(in.seqs, seq)
	return ok
}

// shared returns a sequence both intents hold, or 0 when they hold none in common.
func (in *intent) shared(o *intent) uint64 {
	if in.last < o.first || o.last < in.first {
		return 0
	}
	i, j := 0, 0
	for i < len(in.seqs) && j < len(o.seqs) {
		switch a, b := in.seqs[i], o.seqs[j]; {
		case a == b:
			return a
		case a < b:
			i++
		default:
			j++
		}
	}
	return 0
}

// token is the deduplication token of the batch's insert into table.
func (in *intent) token(table string) string { return in.key + "/" + table }

func newIntent(stream string, seqs []uint64) *intent {
	h := fnv.New64a()
	var b [8]byte
	for _, s := range seqs {
		for i := range b {
			b[i] = byte(s >> (8 * i))
		}
		_, _ = h.Write(b[:])
	}
	first, last := seqs[0], seqs[len(seqs)-1]
	return &intent{
		key:   fmt.Sprintf("%s.%d.%d.%016x", stream, first, last, h.Sum64()),
		first: first,
		last:  last,
		seqs:  seqs,
		state: intentPending,
	}
}

// encodeIntent writes "pending|1-5,9", "committed@42|1-5,9" or "aborted@42|1-5,9":
// the state, the creating revision once it is known, and the sequences as ranges (a
// batch is mostly one contiguous run).
func encodeIntent(in *intent) []byte {
	var sb strings.Builder
	sb.WriteString(in.state)
	if in.state != intentPending && in.rev > 0 {
		sb.WriteByte('@')
		sb.WriteString(strconv.FormatUint(in.rev, 10))
	}
	sb.WriteByte('|')
	for i := 0; i < len(in.seqs); {
		j := i
		for j+1 < len(in.seqs) && in.seqs[j+1] == in.seqs[j]+1 {
			j++
		}
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatUint(in.seqs[i], 10))
		if j > i {
			sb.WriteByte('-')
			sb.WriteString(strconv.FormatUint(in.seqs[j], 10))
		}
		i = j + 1
	}
	return []byte(sb.String())
}

// maxIntentSeqs bounds the sequences one intent may name (a batch holds at most
// max_ack_pending messages; this is far above any configuration).
const maxIntentSeqs = 10_000_000

// decodeIntent reads a value written by encodeIntent; entryRev is the entry's
// revision (the creating one while the intent is pending). A committed value
// without a revision (written before revisions were recorded) counts as oldest.
func decodeIntent(key string, val []byte, entryRev uint64) (*intent, error) {
	head, ranges, ok := strings.Cut(string(val), "|")
	if !ok {
		return nil, fmt.Errorf("intent %s: bad value %.40q", key, val)
	}
	state, revText, hasRev := strings.Cut(head, "@")
	in := &intent{key: key, state: state, entryRev: entryRev}
	switch {
	case state == intentPending && !hasRev:
		in.rev = entryRev
	case state == intentCommitted || state == intentAborted:
		if hasRev {
			r, err := strconv.ParseUint(revText, 10, 64)
			if err != nil || r == 0 {
				return nil, fmt.Errorf("intent %s: bad revision %q", key, revText)
			}
			in.rev = r
		}
	default:
		return nil, fmt.Errorf("intent %s: bad state %.40q", key, head)
	}
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("intent %s: bad sequence %q", key, r)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a || b-a > maxIntentSeqs {
				return nil, fmt.Errorf("intent %s: bad range %q", key, r)
			}
		}
		if len(in.seqs)+int(b-a) >= maxIntentSeqs {
			return nil, fmt.Errorf("intent %s: more than %d sequences", key, maxIntentSeqs)
		}
		for s := a; s <= b; s++ {
			in.seqs = append(in.seqs, s)
		}
	}
	if len(in.seqs) == 0 || !slices.IsSorted(in.seqs) {
		return nil, fmt.Errorf("intent %s: no sorted sequences", key)
	}
	in.first, in.last = in.seqs[0], in.seqs[len(in.seqs)-1]
	return in, nil
}

// parseKeyRange reads first and last sequence from an intent key.
func parseKeyRange(key string) (first, last uint64, ok bool) {
	parts := strings.Split(key, ".")
	if len(parts) != 4 {
		return 0, 0, false
	}
	f, err1 := strconv.ParseUint(parts[1], 10, 64)
	l, err2 := strconv.ParseUint(parts[2], 10, 64)
	return f, l, err1 == nil && err2 == nil
}

// defaultListTimeout bounds a listing of the intent bucket: it takes
// milliseconds when the bucket's servers answer.
const defaultListTimeout = 10 * time.Second

// intentStore keeps one stream's intents in a JetStream key-value bucket.
type intentStore struct {
	kv     jetstream.KeyValue
	stream string
	// pruneDelay is how long an intent's messages must have been seen below the ack
	// floor before it is deleted (see prune).
	pruneDelay time.Duration

	// listTimeout bounds one listing of the bucket (0: defaultListTimeout).
	listTimeout time.Duration

	mu       sync.Mutex
	listed   []string // keys as last listed
	listedAt time.Time
	belowAt  map[string]time.Time // key → when prune first saw it below the ack floor
	floor    uint64               // the ack floor last recorded
}

func (s *intentStore) create(ctx context.Context, seqs []uint64) (*intent, error) {
	in := newIntent(s.stream, seqs)
	rev, err := s.kv.Create(ctx, in.key, encodeIntent(in))
	if err == nil {
		in.rev, in.entryRev = rev, rev
		s.forget()
		return in, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("record intent %s: %w", in.key, err)
	}
	// The same batch was formed before (by us before a restart, or by a racing
	// process): use its record, so both inserts share a token.
	old, err := s.get(ctx, in.key)
	if err != nil || !old.aborted() {
		return old, err
	}
	// An aborted batch formed again (its messages came back once the older batch
	// that beat it was itself aborted): it starts afresh, as a new and younger
	// intent. Nothing was inserted under an aborted intent's tokens.
	rev, err = s.kv.Update(ctx, in.key, encodeIntent(in), old.entryRev)
	if err != nil {
		return nil, fmt.Errorf("record intent %s again: %w", in.key, err)
	}
	in.rev, in.entryRev = rev, rev
	s.forget()
	return in, nil
}

func (s *intentStore) get(ctx context.Context, key string) (*intent, error) {
	e, err := s.kv.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read intent %s: %w", key, err)
	}
	return decodeIntent(key, e.Value(), e.Revision())
}

func (s *intentStore) commit(ctx context.Context, in *intent) error {
	in.state = intentCommitted
	rev, err := s.kv.Put(ctx, in.key, encodeIntent(in))
	if err != nil {
		return fmt.Errorf("commit intent %s: %w", in.key, err)
	}
	in.entryRev = rev
	return nil
}

// abort marks in as never to be inserted. It is a compare-and-set on the revision
// last read: it fails when another process changed the intent meanwhile.
func (s *intentStore) abort(ctx context.Context, in *intent) error {
	was := in.state
	in.state = intentAborted
	rev, err := s.kv.Update(ctx, in.key, encodeIntent(in), in.entryRev)
	if err != nil {
		in.state = was
		return fmt.Errorf("abort intent %s: %w", in.key, err)
	}
	in.entryRev = rev
	s.forget()
	return nil
}

// errBeaten says a batch may not be inserted: an older intent holds one of its
// messages, or one of them was acknowledged already.
var errBeaten = errors.New("batch overlaps an older batch")

// verify decides whether in may be inserted. Two batches can hold the same message
// when it was redelivered while its first batch was still being recorded (a leader
// election can hold an intent's write for longer than ack_wait), or when the first
// process's lookup missed an intent written a moment before. Of all intents holding
// a message, only the oldest (lowest creating revision) is ever inserted: listed
// after in was written, every older intent is seen, unless pruned, and an intent is
// pruned only once all its messages are below the ack floor — which ackFloor,
// read after the listing, then shows. So a batch holding a message at or below the
// floor (acknowledged: stored or dead-lettered) is beaten too.
//
// It returns errBeaten (wrapped, naming the reason) when in must be aborted.
func (s *intentStore) verify(ctx context.Context, in *intent, ackFloor func(context.Context) (uint64, error)) error {
	keys, err := s.keys(ctx, 0)
	if err != nil {
		return err
	}
	for _, k := range keys {
		first, last, ok := parseKeyRange(k)
		if !ok || k == in.key || last < in.first || first > in.last {
			continue
		}
		o, err := s.get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // pruned since the listing: its messages are below the floor
		}
		if err != nil {
			return err
		}
		if o.aborted() || o.rev > in.rev {
			continue
		}
		if seq := in.shared(o); seq != 0 {
			return fmt.Errorf("%w: message %d is in %s (revision %d, %s), older than %s (revision %d)", errBeaten, seq, o.key, o.rev, o.state, in.key, in.rev)
		}
	}
	floor, err := ackFloor(ctx)
	if err != nil {
		return err
	}
	if in.first <= floor {
		return fmt.Errorf("%w: message %d of %s is at or below the ack floor %d (acknowledged already)", errBeaten, in.first, in.key, floor)
	}
	return nil
}

// forget drops the cached key list so the next find lists the bucket again.
func (s *intentStore) forget() {
	s.mu.Lock()
	s.listed = nil
	s.mu.Unlock()
}

// keys lists the stream's intent keys, reusing a listing younger than maxAge.
func (s *intentStore) keys(ctx context.Context, maxAge time.Duration) ([]string, error) {
	s.mu.Lock()
	if maxAge > 0 && s.listed != nil && time.Since(s.listedAt) < maxAge {
		keys := s.listed
		s.mu.Unlock()
		return keys, nil
	}
	s.mu.Unlock()
	// A listing is a watcher that ends when it has seen every key: one whose
	// consumer stalls (its stream's servers restarted under it) would wait for
	// ctx, and ingest's has no deadline, so each listing has its own. A listing
	// cut short is an error, never a shorter list: verify would miss an older
	// batch.
	timeout := s.listTimeout
	if timeout <= 0 {
		timeout = defaultListTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lister, err := s.kv.ListKeysFiltered(lctx, s.stream+".>")
	if err != nil {
		return nil, fmt.Errorf("list intents: %w", err)
	}
	keys := []string{}
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	_ = lister.Stop()
	if err := lctx.Err(); err != nil {
		return nil, fmt.Errorf("list intents: not finished after %s (%d keys read): %w", timeout, len(keys), err)
	}
	s.mu.Lock()
	s.listed, s.listedAt = keys, time.Now()
	s.mu.Unlock()
	return keys, nil
}

// find returns the live (not aborted) intent holding seq, or nil when no batch
// recorded it. With fresh set, it lists the bucket rather than reuse a listing.
func (s *intentStore) find(ctx context.Context, seq uint64, fresh bool) (*intent, error) {
	maxAge := 200 * time.Millisecond
	if fresh {
		maxAge = 0
	}
	keys, err := s.keys(ctx, maxAge)
	if err != nil {
		return nil, err
	}
	var found *intent
	for _, k := range keys {
		first, last, ok := parseKeyRange(k)
		if !ok || seq < first || seq > last {
			continue
		}
		in, err := s.get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // pruned since the listing
		}
		if err != nil {
			return nil, err
		}
		// Of several live intents holding seq, the oldest is the one that counts.
		if !in.aborted() && in.contains(seq) && (found == nil || in.rev < found.rev) {
			found = in
		}
	}
	return found, nil
}

// prune deletes intents whose messages all lie at or below the consumer's ack
// floor: those are never delivered again. It waits pruneDelay after first seeing an
// intent below the floor, so that an acknowledgement a consumer leader lost in an
// election (and redelivers) still finds its batch.
func (s *intentStore) prune(ctx context.Context, ackFloor uint64) (int, error) {
	keys, err := s.keys(ctx, 0)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	s.mu.Lock()
	if s.belowAt == nil {
		s.belowAt = map[string]time.Time{}
	}
	var due []string
	live := make(map[string]bool, len(keys))
	for _, k := range keys {
		live[k] = true
		_, last, ok := parseKeyRange(k)
		if !ok || last > ackFloor {
			delete(s.belowAt, k)
			continue
		}
		at, seen := s.belowAt[k]
		if !seen {
			s.belowAt[k] = now
			at = now
		}
		if now.Sub(at) >= s.pruneDelay {
			due = append(due, k)
		}
	}
	for k := range s.belowAt {
		if !live[k] {
			delete(s.belowAt, k)
		}
	}
	s.mu.Unlock()
	n := 0
	for _, k := range due {
		if err := s.kv.Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return n, fmt.Errorf("prune intent %s: %w", k, err)
		}
		s.mu.Lock()
		delete(s.belowAt, k)
		s.mu.Unlock()
		n++
	}
	if n > 0 {
		s.forget()
	}
	return n, nil
}

// floorKey is where the stream's ack floor is recorded, outside the intents' keys.
func (s *intentStore) floorKey() string { return "floor." + s.stream }

// recordFloor keeps the consumer's ack floor in the bucket, so that a consumer made
// again after it was lost starts where the old one had got to.
func (s *intentStore) recordFloor(ctx context.Context, floor uint64) error {
	s.mu.Lock()
	same := floor == s.floor
	s.mu.Unlock()
	if same || floor == 0 {
		return nil
	}
	if _, err := s.kv.Put(ctx, s.floorKey(), []byte(strconv.FormatUint(floor, 10))); err != nil {
		return fmt.Errorf("record ack floor of %s: %w", s.stream, err)
	}
	s.mu.Lock()
	s.floor = floor
	s.mu.Unlock()
	return nil
}

// recordedFloor returns the ack floor last recorded, and whether there is one.
func (s *intentStore) recordedFloor(ctx context.Context) (uint64, bool, error) {
	e, err := s.kv.Get(ctx, s.floorKey())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read ack floor of %s: %w", s.stream, err)
	}
	f, err := strconv.ParseUint(string(e.Value()), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("read ack floor of %s: bad value %.40q", s.stream, e.Value())
	}
	return f, true, nil
}
