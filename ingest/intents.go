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

// intent records which stream messages one insert holds, before the insert, so that
// a redelivered message can be traced to its batch (see the package comment).
type intent struct {
	// key names the batch: <stream>.<first seq>.<last seq>.<hash of all seqs>. It is
	// also the base of the insert deduplication tokens.
	key       string
	first     uint64
	last      uint64
	seqs      []uint64 // sorted
	committed bool
}

func (in *intent) contains(seq uint64) bool {
	if seq < in.first || seq > in.last {
		return false
	}
	_, ok := slices.BinarySearch(in.seqs, seq)
	return ok
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
	}
}

// encodeIntent writes "pending|1-5,9" or "committed|1-5,9": the state and the
// sequences as ranges (a batch is mostly one contiguous run).
func encodeIntent(in *intent) []byte {
	var sb strings.Builder
	if in.committed {
		sb.WriteString("committed|")
	} else {
		sb.WriteString("pending|")
	}
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

func decodeIntent(key string, val []byte) (*intent, error) {
	state, ranges, ok := strings.Cut(string(val), "|")
	if !ok || (state != "pending" && state != "committed") {
		return nil, fmt.Errorf("intent %s: bad value %.40q", key, val)
	}
	var seqs []uint64
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("intent %s: bad sequence %q", key, r)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a || b-a > 10_000_000 {
				return nil, fmt.Errorf("intent %s: bad range %q", key, r)
			}
		}
		for s := a; s <= b; s++ {
			seqs = append(seqs, s)
		}
	}
	if len(seqs) == 0 || !slices.IsSorted(seqs) {
		return nil, fmt.Errorf("intent %s: no sorted sequences", key)
	}
	return &intent{key: key, first: seqs[0], last: seqs[len(seqs)-1], seqs: seqs, committed: state == "committed"}, nil
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

// intentStore keeps one stream's intents in a JetStream key-value bucket.
type intentStore struct {
	kv     jetstream.KeyValue
	stream string

	mu       sync.Mutex
	listed   []string // keys as last listed
	listedAt time.Time
}

func (s *intentStore) create(ctx context.Context, seqs []uint64) (*intent, error) {
	in := newIntent(s.stream, seqs)
	if _, err := s.kv.Create(ctx, in.key, encodeIntent(in)); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			// The same batch was formed before (by us before a restart, or by a
			// racing process): use its record, so both inserts share a token.
			return s.get(ctx, in.key)
		}
		return nil, fmt.Errorf("record intent %s: %w", in.key, err)
	}
	s.forget()
	return in, nil
}

func (s *intentStore) get(ctx context.Context, key string) (*intent, error) {
	e, err := s.kv.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read intent %s: %w", key, err)
	}
	return decodeIntent(key, e.Value())
}

func (s *intentStore) commit(ctx context.Context, in *intent) error {
	in.committed = true
	if _, err := s.kv.Put(ctx, in.key, encodeIntent(in)); err != nil {
		return fmt.Errorf("commit intent %s: %w", in.key, err)
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
	if s.listed != nil && time.Since(s.listedAt) < maxAge {
		keys := s.listed
		s.mu.Unlock()
		return keys, nil
	}
	s.mu.Unlock()
	lister, err := s.kv.ListKeysFiltered(ctx, s.stream+".>")
	if err != nil {
		return nil, fmt.Errorf("list intents: %w", err)
	}
	keys := []string{}
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	_ = lister.Stop()
	s.mu.Lock()
	s.listed, s.listedAt = keys, time.Now()
	s.mu.Unlock()
	return keys, nil
}

// find returns the intent holding seq, or nil when no batch recorded it.
func (s *intentStore) find(ctx context.Context, seq uint64) (*intent, error) {
	keys, err := s.keys(ctx, 200*time.Millisecond)
	if err != nil {
		return nil, err
	}
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
		if in.contains(seq) {
			return in, nil
		}
	}
	return nil, nil
}

// prune deletes intents whose messages all lie at or below the consumer's ack
// floor: those can never be delivered again.
func (s *intentStore) prune(ctx context.Context, ackFloor uint64) (int, error) {
	keys, err := s.keys(ctx, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		if _, last, ok := parseKeyRange(k); ok && last <= ackFloor {
			if err := s.kv.Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				return n, fmt.Errorf("prune intent %s: %w", k, err)
			}
			n++
		}
	}
	if n > 0 {
		s.forget()
	}
	return n, nil
}
