package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Dead-letter headers.
const (
	HeaderError     = "Gpupool-Error"
	HeaderReason    = "Gpupool-Reason"
	HeaderSubject   = "Gpupool-Subject"
	HeaderStreamSeq = "Gpupool-Stream-Seq"
)

// Fault points a test can stop a pipeline at (see WithFault).
const (
	FaultBeforeIntent = "before-intent" // batch formed, no intent yet (a test may stall here)
	FaultAfterIntent  = "after-intent"  // intent recorded, nothing inserted
	FaultAfterInsert  = "after-insert"  // rows committed, intent pending, nothing acked
	FaultAfterCommit  = "after-commit"  // intent committed, nothing acked
)

// errFault stops a pipeline as a crash would: nothing more is acked or committed.
var errFault = errors.New("ingest: stopped by injected fault")

type pendingMsg struct {
	msg       ackHandle
	seq       uint64
	fetchedAt time.Time
	size      int
	// delivered is how many times JetStream delivered the message.
	delivered uint64
}

// staleRedeliveries is how many deliveries of a message make a batch holding it
// be inserted even when it was held past the hold limit (ack_wait / 2): left to
// redelivery again it could come back late every time (a store slower than the
// limit on every try), and the intents settle a message held by two batches.
const staleRedeliveries = 3

// pipeline moves one stream into the store.
type pipeline struct {
	kind    string
	stream  string
	durable string
	// schema is the Gpupool-Schema header value this pipeline decodes; a message
	// naming another (samples/v2 from a newer collector) is dead-lettered, never
	// guessed at. A message with no header is taken as this version.
	schema string
	cfg    Config
	js     jetstream.JetStream
	cons   jetstream.Consumer
	// recreate makes the durable consumer again (after it was deleted, or lost with
	// a server that kept no state).
	recreate func(context.Context) (jetstream.Consumer, error)
	sink     Sink
	newRows  func() rowSink
	// recoverRows gathers a recovered batch's messages, checked when first
	// accepted (no node restriction again).
	recoverRows func() rowSink
	intents     *intentStore
	metrics     *Metrics
	log         *slog.Logger
	fault       func(kind, point string) error
	now         func() time.Time

	// cur gathers messages while the previous batch, spare, may still be inserted
	// by a background flush (flushing is its result): gathering overlaps the
	// store's work, and at most two batches are held.
	cur      *batch
	spare    *batch
	flushing chan error
	// flushingSeqs is the stream sequences of the batch in flight (spare) until
	// its flush is collected: a message of it delivered again meanwhile is handed
	// back, not gathered, for its rows would count as repeats of rows that may
	// never be stored (a batch left to redelivery, beaten or failed).
	flushingSeqs map[uint64]struct{}

	// suspectBelow: messages up to this sequence may have been delivered to a
	// consumer that was lost and made again, so their delivery count says nothing;
	// each is looked up in the intents as a redelivery is.
	suspectBelow uint64

	// recent is the content keys of the batches committed (dedup.go).
	recent *recentKeys

	rowsInserted, deadLettered, dedupHits, beaten, duplicates atomic.Uint64
}

// countDup counts rows dropped as repeats of rows stored or gathered.
func (p *pipeline) countDup(table string, n int) {
	p.duplicates.Add(uint64(n))
	p.metrics.duplicates.WithLabelValues(table).Add(float64(n))
}

// batch is the messages gathered for one insert, and their rows.
type batch struct {
	rows    rowSink
	pending []pendingMsg
	seen    map[uint64]int // stream seq → index in pending
	rowsN   int
	firstAt time.Time
	// held serialises the in-progress acks of the batch's table inserts, which
	// retry concurrently (retry).
	held sync.Mutex
	// committed: the last flush stored the batch (its content keys then count as
	// stored).
	committed bool
}

func newBatch(rows rowSink) *batch { return &batch{rows: rows, seen: map[uint64]int{}} }

func (b *batch) reset() {
	b.pending = b.pending[:0]
	clear(b.seen)
	b.rowsN = 0
	b.rows.reset()
}

func (p *pipeline) run(ctx context.Context) error {
	janitor := time.NewTicker(2 * time.Second)
	defer janitor.Stop()
	// The backlog gauges are read from the consumer on their own clock: the loop
	// below waits on the store, and an outage is when they matter.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go p.watchBacklog(watchCtx, backlogEvery)
	for {
		if ctx.Err() != nil {
			return p.shutdown()
		}
		select {
		case <-janitor.C:
			p.housekeep(ctx)
		default:
		}
		if err := p.collectFlush(false); err != nil {
			return p.stop(ctx, err)
		}
		b := p.cur
		p.keepAlive(b)
		wait := p.cfg.BatchAge
		if len(b.pending) > 0 {
			wait = p.cfg.BatchAge - p.now().Sub(b.firstAt)
		}
		if len(b.pending) > 0 && (wait <= 0 || b.rowsN >= p.cfg.BatchRows) {
			if err := p.startFlush(ctx); err != nil {
				return p.stop(ctx, err)
			}
			continue
		}
		wait = max(wait, 50*time.Millisecond)
		if err := p.fetch(ctx, wait); err != nil {
			if ctx.Err() != nil || errors.Is(err, errFault) {
				return p.stop(ctx, err)
			}
			p.log.Warn("fetch failed", "err", err)
			sleep(ctx, 200*time.Millisecond)
		}
	}
}

// fetch pulls up to FetchMax messages, waiting at most wait, and handles them.
//
// The wait is the pull request's expiry, enforced by the server, not a client-side
// context: a client that gives up on a request while the server is still sending
// drops those messages, which then sit unacknowledged until ack_wait.
func (p *pipeline) fetch(ctx context.Context, wait time.Duration) error {
	batch, err := p.cons.Fetch(p.cfg.FetchMax, jetstream.FetchMaxWait(wait))
	if err != nil {
		return p.maybeRecreate(ctx, err)
	}
	for msg := range batch.Messages() {
		if err := p.handle(ctx, msg); err != nil {
			if ctx.Err() != nil || errors.Is(err, errFault) {
				return err
			}
			p.log.Warn("message not handled, will be redelivered", "err", err)
		}
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		p.log.Debug("fetch ended", "err", err)
		return p.maybeRecreate(ctx, err)
	}
	return nil
}

// maybeRecreate makes the consumer again when err says it is gone, and returns err.
func (p *pipeline) maybeRecreate(ctx context.Context, err error) error {
	if !errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrConsumerDeleted) {
		return err
	}
	st, serr := p.js.Stream(ctx, p.stream)
	if serr != nil {
		return fmt.Errorf("%w; reading stream %s: %v", err, p.stream, serr)
	}
	c, cerr := p.recreate(ctx)
	if cerr != nil {
		return fmt.Errorf("%w; recreating it: %v", err, cerr)
	}
	p.cons = c
	p.suspectBelow = max(p.suspectBelow, st.CachedInfo().State.LastSeq)
	p.log.Warn("consumer was gone; created it again", "err", err)
	return nil
}

// collectFlush takes the result of the background flush, waiting for it if wait is
// set. A fault or a cancelled context is returned; any other failure was logged and
// its messages are left to redelivery.
func (p *pipeline) collectFlush(wait bool) error {
	if p.flushing == nil {
		return nil
	}
	var err error
	if wait {
		// While the store takes its time, the batch gathered meanwhile is kept
		// from redelivery: it is not stale for having waited its turn.
		tick := time.NewTicker(max(p.cfg.AckWait/8, 10*time.Millisecond))
		defer tick.Stop()
	waiting:
		for {
			select {
			case err = <-p.flushing:
				break waiting
			case <-tick.C:
				p.keepAlive(p.cur)
			}
		}
	} else {
		select {
		case err = <-p.flushing:
		default:
			return nil
		}
	}
	p.flushing = nil
	clear(p.flushingSeqs)
	// The flushed batch is spare now: its keys count as stored if it was.
	d := p.spare.rows.dedupper()
	p.cur.rows.dedupper().setInflight(nil)
	if p.spare.committed {
		p.recent.add(d.takeKeys())
	} else {
		d.clearKeys()
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, errFault) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	p.log.Error("flush failed; its messages will be redelivered", "err", err)
	return nil
}

// startFlush hands the current batch to a background flush, once the previous one
// has finished (that wait is ingest's backpressure), and gathers into the spare.
func (p *pipeline) startFlush(ctx context.Context) error {
	if err := p.collectFlush(true); err != nil {
		return err
	}
	b := p.cur
	// Waiting for the previous flush may have taken a while: the batch is not
	// stale for that.
	p.keepAlive(b)
	p.cur, p.spare = p.spare, b
	p.cur.rows.dedupper().setInflight(b.rows.dedupper().keys())
	if p.flushingSeqs == nil {
		p.flushingSeqs = make(map[uint64]struct{}, len(b.pending))
	}
	for _, m := range b.pending {
		p.flushingSeqs[m.seq] = struct{}{}
	}
	done := make(chan error, 1)
	p.flushing = done
	go func() { done <- p.flush(ctx, b) }()
	return nil
}

// stop ends run: an injected fault returns its error as a crash would; a cancelled
// context is a normal shutdown.
func (p *pipeline) stop(_ context.Context, err error) error {
	if errors.Is(err, errFault) {
		_ = p.collectFlush(true)
		return err
	}
	return p.shutdown()
}

// shutdown waits for the background flush and flushes what is gathered, with a
// short deadline of its own, so a stopped ingest leaves little for redelivery. What
// cannot be flushed is redelivered later.
func (p *pipeline) shutdown() error {
	if err := p.collectFlush(true); errors.Is(err, errFault) {
		return err
	}
	if len(p.cur.pending) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.flush(ctx, p.cur); err != nil {
		if errors.Is(err, errFault) {
			return err
		}
		p.log.Warn("flush on shutdown failed; messages will be redelivered", "err", err)
	}
	return nil
}

func (p *pipeline) faultAt(point string) error {
	if p.fault == nil {
		return nil
	}
	if err := p.fault(p.kind, point); err != nil {
		return fmt.Errorf("%w at %s: %v", errFault, point, err)
	}
	return nil
}

// handle takes one delivered message into the current batch, or settles it at once
// (redelivery of a recorded batch, dead letter).
func (p *pipeline) handle(ctx context.Context, msg jetstream.Msg) error {
	meta, err := msg.Metadata()
	if err != nil {
		return fmt.Errorf("message metadata: %w", err)
	}
	p.metrics.messages.WithLabelValues(p.kind).Inc()
	seq := meta.Sequence.Stream
	delivered := meta.NumDelivered
	b := p.cur
	if i, ok := b.seen[seq]; ok {
		// Redelivered while still in our batch: keep the newest delivery to ack.
		h, err := newAckHandle(p.js.Conn(), msg)
		if err != nil {
			return err
		}
		b.pending[i].msg = h
		b.pending[i].delivered = max(b.pending[i].delivered, delivered)
		return nil
	}
	if _, ok := p.flushingSeqs[seq]; ok {
		// Delivered again while its batch is in flight: handed back until that
		// flush is settled (then it is found committed, or gathered anew).
		return msg.NakWithDelay(max(p.cfg.BatchAge, 100*time.Millisecond))
	}
	// A message delivered before may be in a batch already; so may any message of
	// a consumer made again (its delivery counts start over).
	if meta.NumDelivered > 1 || seq <= p.suspectBelow {
		if meta.NumDelivered > 1 {
			p.metrics.redelivered.WithLabelValues(p.kind).Inc()
		}
		in, err := p.intents.find(ctx, seq, false)
		if err != nil {
			_ = msg.NakWithDelay(time.Second)
			return fmt.Errorf("look up intent of message %d: %w", seq, err)
		}
		if in != nil {
			if !in.committed() {
				err := p.recover(ctx, in)
				if errors.Is(err, errBeaten) {
					// The pending batch lost to an older one and is aborted now; the
					// message comes back and is found in the batch that counts.
					_ = msg.NakWithDelay(100 * time.Millisecond)
					return nil
				}
				if err != nil {
					_ = msg.NakWithDelay(time.Second)
					return err
				}
			}
			p.dedupHits.Add(1)
			p.metrics.dedupHits.WithLabelValues(p.kind).Inc()
			return msg.Ack()
		}
	}
	if v := msg.Headers().Get(schemas.HeaderSchema); v != "" && v != p.schema {
		return p.deadLetter(ctx, msg, seq, fmt.Errorf("%w: the %s header is %q; this ingest reads %q", schemas.ErrSchemaVersion, schemas.HeaderSchema, v, p.schema))
	}
	h, err := newAckHandle(p.js.Conn(), msg)
	if err != nil {
		return err
	}
	n, err := b.rows.add(ctx, msg.Subject(), msg.Data(), p.now())
	if errors.Is(err, errTransient) {
		_ = msg.NakWithDelay(time.Second)
		return fmt.Errorf("check message %d: %w", seq, err)
	}
	if err != nil {
		return p.settleRepeat(ctx, msg, seq, err)
	}
	if len(b.pending) == 0 {
		b.firstAt = p.now()
	}
	b.seen[seq] = len(b.pending)
	b.pending = append(b.pending, pendingMsg{msg: h, seq: seq, fetchedAt: p.now(), size: len(msg.Data()), delivered: delivered})
	b.rowsN += n
	return nil
}

// settleRepeat settles a message that add did not take: a repeat of rows stored
// already is acknowledged (its rows were counted as duplicates), one repeating
// the batch in flight is handed back until that batch is settled (dedup.go), and
// any other is dead-lettered with err's reason.
func (p *pipeline) settleRepeat(ctx context.Context, msg jetstream.Msg, seq uint64, err error) error {
	var rep *repeatError
	switch {
	case errors.As(err, &rep):
		p.log.Debug("message repeats stored rows; acknowledged", "seq", seq, "err", err)
		return msg.Ack()
	case errors.Is(err, errHandBack):
		return msg.NakWithDelay(max(p.cfg.BatchAge, 100*time.Millisecond))
	}
	return p.deadLetter(ctx, msg, seq, err)
}

// flush commits a batch: intent, inserts, commit mark, acks. The batch is empty
// afterwards, whatever happened; unacked messages are redelivered.
func (p *pipeline) flush(ctx context.Context, b *batch) error {
	b.committed = false
	defer b.reset()
	if len(b.pending) == 0 {
		return nil
	}
	// A batch held for half of ack_wait may already be redelivered elsewhere: it
	// is left to redelivery, unless its messages came back that way before (the
	// store is slower than the limit on every try), and then inserted, the
	// intents settling a message two batches hold (docs/ingest.md, step 6).
	oldest, delivered := b.pending[0].fetchedAt, uint64(0)
	for _, m := range b.pending {
		if m.fetchedAt.Before(oldest) {
			oldest = m.fetchedAt
		}
		delivered = max(delivered, m.delivered)
	}
	if age := p.now().Sub(oldest); age > p.cfg.AckWait/2 {
		if delivered < staleRedeliveries {
			p.log.Warn("batch held too long, leaving it to redelivery", "messages", len(b.pending), "age", age, "deliveries", delivered)
			p.metrics.dropped.WithLabelValues(p.kind).Inc()
			return nil
		}
		p.log.Warn("batch held too long again; inserting it (the intents settle any overlap)", "messages", len(b.pending), "age", age, "deliveries", delivered)
	}
	seqs := make([]uint64, len(b.pending))
	bytes := 0
	for i, m := range b.pending {
		seqs[i] = m.seq
		bytes += m.size
	}
	slices.Sort(seqs)
	if err := p.faultAt(FaultBeforeIntent); err != nil {
		return err
	}
	var in *intent
	err := p.retry(ctx, b, "intent", func() error {
		var err error
		in, err = p.intents.create(ctx, seqs)
		return err
	})
	if err != nil {
		return err
	}
	if err := p.faultAt(FaultAfterIntent); err != nil {
		return err
	}
	if in.committed() {
		// A racing process committed this very batch already.
		p.dedupHits.Add(uint64(len(b.pending)))
		p.metrics.dedupHits.WithLabelValues(p.kind).Add(float64(len(b.pending)))
		p.ackAll(b)
		b.committed = true
		return nil
	}
	if err := p.retry(ctx, b, "verify intent", func() error { return p.settleOverlap(ctx, in) }); err != nil {
		if !errors.Is(err, errBeaten) {
			return err
		}
		// Another batch holds some of these messages and is the one that counts:
		// hand them all back; each is found in its batch on redelivery.
		p.log.Info("batch overlaps an older one; handing its messages back", "intent", in.key, "messages", len(b.pending), "reason", err)
		p.beaten.Add(1)
		p.metrics.beaten.WithLabelValues(p.kind).Inc()
		p.intents.forget()
		// The delay gives the older batch's process time to commit it, so that the
		// redelivered messages find it committed rather than recover it again.
		for _, m := range b.pending {
			_ = m.msg.NakWithDelay(time.Second)
		}
		return nil
	}
	if err := p.insert(ctx, b, in, b.rows.blocks()); err != nil {
		return err
	}
	if err := p.faultAt(FaultAfterInsert); err != nil {
		return err
	}
	// The rows are in: finish the bookkeeping even if ctx was cancelled meanwhile.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := p.intents.commit(cctx, in); err != nil {
		// Not fatal: a redelivery would rebuild the batch and its inserts dedupe.
		p.log.Warn("intent not marked committed", "intent", in.key, "err", err)
	}
	if err := p.faultAt(FaultAfterCommit); err != nil {
		return err
	}
	p.metrics.batches.WithLabelValues(p.kind).Inc()
	p.metrics.batchRows.WithLabelValues(p.kind).Observe(float64(b.rowsN))
	p.metrics.batchBytes.WithLabelValues(p.kind).Observe(float64(bytes))
	p.ackAll(b)
	b.committed = true
	return nil
}

// keepAlive tells JetStream that the messages of b, gathered or waiting for the
// store, are still being worked on once they have been held a quarter of
// ack_wait, so that they are not redelivered (and the batch not dropped as
// stale) for waiting their turn.
func (p *pipeline) keepAlive(b *batch) {
	if len(b.pending) == 0 || p.now().Sub(b.pending[0].fetchedAt) < p.cfg.AckWait/4 {
		return
	}
	b.held.Lock()
	defer b.held.Unlock()
	now := p.now()
	for i := range b.pending {
		if err := b.pending[i].msg.InProgress(); err == nil {
			b.pending[i].fetchedAt = now
		}
	}
}

func (p *pipeline) ackAll(b *batch) {
	for _, m := range b.pending {
		if err := m.msg.Ack(); err != nil {
			p.log.Warn("ack failed; the message will be redelivered and deduplicated", "seq", m.seq, "err", err)
		}
	}
}

// insert writes every table's block under the intent's tokens, retrying until the
// store accepts it or ctx ends. The batch's largest block (process_samples, as a
// rule) is inserted on a connection of its own while the others, small, go one
// after another on a second: the engine writes one insert's part on one thread, so
// the small tables no longer wait for the large one, nor compete with it for more
// than one core (docs/measurements.md, ingest throughput). While it retries, the
// batch's messages (b, when there is one) are kept from redelivery with
// in-progress acks.
func (p *pipeline) insert(ctx context.Context, b *batch, in *intent, blocks []tableBlock) error {
	largest := -1
	for i, tb := range blocks {
		if largest < 0 || tb.block.Rows() > blocks[largest].block.Rows() {
			largest = i
		}
	}
	one := func(tb tableBlock) error {
		n := tb.block.Rows()
		if n == 0 {
			return nil
		}
		err := p.retry(ctx, b, tb.table, func() error {
			start := time.Now()
			if err := p.sink.Insert(ctx, tb.table, tb.block, in.token(tb.table)); err != nil {
				return err
			}
			p.metrics.insertDur.WithLabelValues(tb.table).Observe(time.Since(start).Seconds())
			return nil
		})
		if err != nil {
			return err
		}
		p.metrics.rows.WithLabelValues(tb.table).Add(float64(n))
		if !tb.rollup {
			p.rowsInserted.Add(uint64(n))
		}
		return nil
	}
	var g errgroup.Group
	if largest >= 0 {
		g.Go(func() error { return one(blocks[largest]) })
	}
	g.Go(func() error {
		for i, tb := range blocks {
			if i == largest {
				continue
			}
			if err := one(tb); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}

// retry runs fn until it succeeds or ctx ends, with capped exponential backoff.
func (p *pipeline) retry(ctx context.Context, b *batch, what string, fn func() error) error {
	backoff := 100 * time.Millisecond
	lastProgress := time.Now()
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || errors.Is(err, errBeaten) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("ingest %s: %s: %w", p.kind, what, ctx.Err())
		}
		p.metrics.retries.WithLabelValues(what).Inc()
		if attempt == 1 || attempt%10 == 0 {
			p.log.Warn("store write failed, retrying", "what", what, "attempt", attempt, "backoff", backoff, "err", err)
		}
		if b != nil && time.Since(lastProgress) > p.cfg.AckWait/4 {
			b.held.Lock()
			for i := range b.pending {
				_ = b.pending[i].msg.InProgress()
				// Held messages restart their clock: the batch is not stale.
				b.pending[i].fetchedAt = p.now()
			}
			b.held.Unlock()
			lastProgress = time.Now()
		}
		if !sleep(ctx, backoff) {
			return fmt.Errorf("ingest %s: %s: %w", p.kind, what, ctx.Err())
		}
		backoff = min(backoff*2, p.cfg.RetryMax)
	}
}

// settleOverlap verifies in against older intents and the ack floor (see
// intentStore.verify); a beaten intent is aborted, and errBeaten returned, so that
// nobody inserts it later. Other errors are transient (the bucket or the consumer
// unreachable): the caller retries.
func (p *pipeline) settleOverlap(ctx context.Context, in *intent) error {
	err := p.intents.verify(ctx, in, p.ackFloor)
	if !errors.Is(err, errBeaten) {
		return err
	}
	if aerr := p.intents.abort(ctx, in); aerr != nil {
		// Changed meanwhile: read it again and decide on what it is now.
		cur, gerr := p.intents.get(ctx, in.key)
		if errors.Is(gerr, jetstream.ErrKeyNotFound) {
			// Gone: pruned, its messages settled below the ack floor (the
			// usual way to be beaten after a restart of the bus). Nobody can
			// insert under an intent that is not there: as good as aborted.
			// Taking it for a transient failure retried it forever, the
			// batch's messages held in progress: ingest wedged.
			return err
		}
		if gerr != nil {
			return fmt.Errorf("%v; %w", aerr, gerr)
		}
		if !cur.aborted() {
			return aerr
		}
	}
	return err
}

// ackFloor reads the consumer's ack floor: every message at or below it is settled.
func (p *pipeline) ackFloor(ctx context.Context) (uint64, error) {
	info, err := p.cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("consumer info: %w", err)
	}
	return info.AckFloor.Stream, nil
}

// recover rebuilds an interrupted batch from the stream and inserts it under its
// original tokens: where the first insert landed, ClickHouse drops the repeat. A
// batch an older one beat is aborted instead, and errBeaten returned.
func (p *pipeline) recover(ctx context.Context, in *intent) error {
	if err := p.settleOverlap(ctx, in); err != nil {
		return err
	}
	stream, err := p.js.Stream(ctx, p.stream)
	if err != nil {
		return fmt.Errorf("recover batch %s: %w", in.key, err)
	}
	rows := p.recoverRows()
	missing := 0
	for _, seq := range in.seqs {
		raw, err := stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			missing++
			continue
		}
		if err != nil {
			return fmt.Errorf("recover batch %s: get message %d: %w", in.key, seq, err)
		}
		if _, err := rows.add(ctx, raw.Subject, raw.Data, p.now()); err != nil {
			return fmt.Errorf("recover batch %s: message %d no longer decodes: %w", in.key, seq, err)
		}
	}
	if missing > 0 {
		p.log.Warn("recovering batch with messages gone from the stream (retention limits)", "intent", in.key, "missing", missing)
	}
	if err := p.insert(ctx, nil, in, rows.blocks()); err != nil {
		return err
	}
	if err := p.intents.commit(ctx, in); err != nil {
		return err
	}
	p.metrics.recovered.WithLabelValues(p.kind).Inc()
	p.log.Info("recovered interrupted batch", "intent", in.key, "messages", len(in.seqs))
	return nil
}

// deadLetter moves a message that cannot be stored to the dead-letter stream with
// the reason, then terminates it so it is never redelivered.
func (p *pipeline) deadLetter(ctx context.Context, msg jetstream.Msg, seq uint64, cause error) error {
	reason := deadLetterReason(cause)
	text := cause.Error()
	if len(text) > 1000 {
		text = text[:1000]
	}
	dl := &nats.Msg{Subject: bus.DeadLetterSubject(p.kind), Data: msg.Data(), Header: nats.Header{}}
	dl.Header.Set(HeaderError, text)
	dl.Header.Set(HeaderReason, reason)
	dl.Header.Set(HeaderSubject, msg.Subject())
	dl.Header.Set(HeaderStreamSeq, strconv.FormatUint(seq, 10))
	dl.Header.Set(nats.MsgIdHdr, p.stream+"-"+strconv.FormatUint(seq, 10))
	ack, err := p.js.PublishMsg(ctx, dl)
	if err != nil {
		_ = msg.NakWithDelay(time.Second)
		return fmt.Errorf("dead-letter message %d (%s): %w", seq, reason, err)
	}
	if ack.Duplicate {
		// Dead-lettered before, and delivered again before its Term reached the
		// server (an ack wait passed): the dead-letter stream kept the first copy
		// (the message ID), so it is counted, logged and told once.
		p.log.Info("message dead-lettered before, terminated again", "seq", seq, "subject", msg.Subject())
		return msg.Term()
	}
	p.deadLettered.Add(1)
	p.metrics.deadLetters.WithLabelValues(p.kind, reason).Inc()
	p.log.Warn("message dead-lettered", "seq", seq, "subject", msg.Subject(), "reason", reason, "err", cause)
	p.tellCollector(msg, reason, text)
	return msg.Term()
}

// tellCollector sends the node that published a dead-lettered sample batch a
// notice (core NATS, not stored: the dead-letter stream is the record), so its
// collector can count and report what it loses.
func (p *pipeline) tellCollector(msg jetstream.Msg, reason, text string) {
	subject, ok := bus.RejectedFor(msg.Subject())
	if !ok || p.js.Conn() == nil {
		return
	}
	n := &nats.Msg{Subject: subject, Data: []byte(text), Header: nats.Header{}}
	n.Header.Set(bus.HeaderRejectReason, reason)
	if pb, err := schemas.NewDecoder().DecodeColumns(msg.Data()); err == nil {
		rows := 0
		if pb.Gpus != nil {
			rows += len(pb.Gpus.TsDeltaMs)
		}
		if pb.Processes != nil {
			rows += len(pb.Processes.TsDeltaMs)
		}
		n.Header.Set(bus.HeaderRejectRows, strconv.Itoa(rows))
	}
	if err := p.js.Conn().PublishMsg(n); err != nil {
		p.log.Debug("rejection notice not sent", "subject", subject, "err", err)
	}
}

// backlogEvery is how often the backlog gauges are read from the consumer.
var backlogEvery = time.Second

// watchBacklog sets the backlog gauges from the consumer's info every interval
// until ctx ends: what the stream holds for ingest, whatever ingest is doing (a
// store outage holds the pipeline in its retries, and the backlog grows).
func (p *pipeline) watchBacklog(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		p.readBacklog(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// readBacklog reads the consumer by name (the pipeline may be making it again)
// and sets pending (the stream's messages after the last delivered), ack
// pending and the lag: the age of the oldest message not acknowledged.
func (p *pipeline) readBacklog(ctx context.Context) {
	c, err := p.js.Consumer(ctx, p.stream, p.durable)
	if err != nil {
		p.log.Debug("backlog: consumer", "err", err)
		return
	}
	info, err := c.Info(ctx)
	if err != nil {
		p.log.Debug("backlog: consumer info", "err", err)
		return
	}
	p.metrics.pending.WithLabelValues(p.kind).Set(float64(info.NumPending))
	p.metrics.ackPending.WithLabelValues(p.kind).Set(float64(info.NumAckPending))
	lag := 0.0
	if info.NumPending+uint64(info.NumAckPending) > 0 {
		if s, err := p.js.Stream(ctx, p.stream); err == nil {
			if raw, err := s.GetMsg(ctx, info.AckFloor.Stream+1); err == nil {
				lag = p.now().Sub(raw.Time).Seconds()
			}
		}
	}
	p.metrics.lagSeconds.WithLabelValues(p.kind).Set(lag)
}

// housekeep records the ack floor and prunes intents below it.
func (p *pipeline) housekeep(ctx context.Context) {
	info, err := p.cons.Info(ctx)
	if err != nil {
		p.log.Debug("consumer info", "err", err)
		return
	}
	if err := p.intents.recordFloor(ctx, info.AckFloor.Stream); err != nil {
		p.log.Warn("record ack floor", "err", err)
	}
	if _, err := p.intents.prune(ctx, info.AckFloor.Stream); err != nil {
		p.log.Warn("prune intents", "err", err)
	}
	if keys, err := p.intents.keys(ctx, time.Second); err == nil {
		p.metrics.intentsAlive.WithLabelValues(p.kind).Set(float64(len(keys)))
	}
}

// sleep waits d or until ctx ends; it reports whether the full wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Sink is where ingest writes rows; store.Store implements it. Insert is called
// concurrently, once per table of a batch.
type Sink interface {
	Insert(ctx context.Context, table string, b *store.Block, token string) error
}
