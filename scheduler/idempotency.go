package scheduler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// A submit may carry an idempotency key (the API's Idempotency-Key header, as
// payment APIs have): a retry with the same key and the same job spec, by the
// same caller, returns the job the first call queued instead of queueing
// another; the same key with another spec is refused (ErrIdempotencyMismatch).
// Keys are scoped per caller (the actor: auth's method:name), so one caller's
// key never finds another's job. The table is journaled with the job in the
// same durable step, kept for a bounded time (DefaultIdempotencyTTL) and a
// bounded number of keys (DefaultIdempotencyMaxKeys), the oldest forgotten
// first: a retry after that queues a new job.

// DefaultIdempotencyTTL is how long an idempotency key is remembered.
const DefaultIdempotencyTTL = 24 * time.Hour

// DefaultIdempotencyMaxKeys bounds the keys remembered (each ~200 bytes of the
// job state file).
const DefaultIdempotencyMaxKeys = 10000

// MaxIdempotencyKeyLen bounds a key's length, in bytes.
const MaxIdempotencyKeyLen = 255

// ErrIdempotencyMismatch means an idempotency key was used before with another
// job spec: the retry is not the same request.
var ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")

// ErrBadIdempotencyKey means an idempotency key is empty of meaning: too long,
// or not printable ASCII.
var ErrBadIdempotencyKey = errors.New("invalid idempotency key")

// ErrNotDurable means the job state could not be written to disk: the request
// may have been applied in memory only. Retry it with the same idempotency key.
var ErrNotDurable = errors.New("job state not written to disk")

// WithIdempotency sets how long idempotency keys are kept and how many (0:
// the defaults).
func WithIdempotency(ttl time.Duration, maxKeys int) Option {
	return func(s *Service) {
		if ttl > 0 {
			s.idem.ttl = ttl
		}
		if maxKeys > 0 {
			s.idem.max = maxKeys
		}
	}
}

// idemEntry is one remembered key: who used it, a hash of the spec it came
// with, and the job it queued.
type idemEntry struct {
	Actor string    `json:"actor,omitempty"`
	Key   string    `json:"key"`
	Body  string    `json:"body"`
	Job   string    `json:"job"`
	Time  time.Time `json:"time"`
}

type idemID struct{ actor, key string }

// idemTable is the keys remembered, oldest first.
type idemTable struct {
	ttl   time.Duration
	max   int
	byID  map[idemID]*idemEntry
	order []*idemEntry
}

func newIdemTable() idemTable {
	return idemTable{ttl: DefaultIdempotencyTTL, max: DefaultIdempotencyMaxKeys, byID: map[idemID]*idemEntry{}}
}

// get returns the live entry of actor's key, or nil.
func (t *idemTable) get(actor, key string, now time.Time) *idemEntry {
	t.evict(now)
	return t.byID[idemID{actor, key}]
}

// put remembers e (replacing an entry of the same key).
func (t *idemTable) put(e idemEntry, now time.Time) {
	p := &e
	t.byID[idemID{e.Actor, e.Key}] = p // an older entry of the key is left dead in order
	t.order = append(t.order, p)
	t.evict(now)
}

// evict forgets keys past the ttl, then the oldest past max.
func (t *idemTable) evict(now time.Time) {
	n := 0
	for n < len(t.order) {
		e := t.order[n]
		live := t.byID[idemID{e.Actor, e.Key}] == e
		if live && now.Sub(e.Time) < t.ttl && len(t.byID) <= t.max {
			break
		}
		if live {
			delete(t.byID, idemID{e.Actor, e.Key})
		}
		n++
	}
	if n > 0 {
		t.order = t.order[n:]
	}
}

// entries returns the live entries, oldest first (the snapshot's copy).
func (t *idemTable) entries(now time.Time) []idemEntry {
	t.evict(now)
	out := make([]idemEntry, 0, len(t.byID))
	for _, e := range t.order {
		if t.byID[idemID{e.Actor, e.Key}] == e {
			out = append(out, *e)
		}
	}
	return out
}

// checkIdemKey refuses a key that is too long or not printable ASCII.
func checkIdemKey(key string) error {
	if len(key) > MaxIdempotencyKeyLen {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrBadIdempotencyKey, len(key), MaxIdempotencyKeyLen)
	}
	for i := range len(key) {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: byte %d is not printable ASCII (use letters, digits and punctuation, e.g. a UUID)", ErrBadIdempotencyKey, i+1)
		}
	}
	return nil
}

// specHash is what "the same request" means: the spec as the scheduler reads
// it (so that spacing and field order in the body do not matter).
func specHash(spec JobSpec) string {
	data, _ := json.Marshal(spec)
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:16])
}
