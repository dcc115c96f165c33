package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// maxRounds bounds the admission rounds of one pass: a round whose stops free
// GPUs at once is followed by another that hands them out.
const maxRounds = 4

// Service is the scheduler as a running component: the engine, the policies, the
// executors that carry actions out, and the audit trail every decision goes to.
// Its methods are safe for concurrent use; passes run one at a time, and no lock
// is held while an executor is called.
type Service struct {
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	sleep    func(context.Context, time.Duration) error
	rec      Recorder
	pub      Publisher
	notifier Notifier
	source   FindingSource
	execs    map[string]executor.Executor
	metrics  *Metrics
	idPrefix *string

	passMu sync.Mutex
	mu     sync.Mutex
	engine *Engine
	pstate *policyState
	kick   chan struct{}
	// pushed holds the findings pushed, memo what the scheduler knows of each
	// open one (finding_push.go, finding.go).
	pushed pushedFindings
	memo   map[string]*findingMemo
	// external finds a SubmitSuspended job by its key in its own system.
	external map[string]string

	// statePath is the job state file ("": none), jrnl its journal; gen is the
	// snapshot's generation, lastSeq the last place in line written, snapSize
	// the snapshot's size; mustCompact: the next save writes a snapshot (a
	// journal write failed). saveMu guards them, and is taken before mu.
	statePath   string
	saveMu      sync.Mutex
	jrnl        *journal
	gen         uint64
	lastSeq     uint64
	snapSize    int64
	mustCompact bool

	// Submits made durable together (commit.go): idem is the idempotency keys
	// (idempotency.go); pendAudit, pendIdem and pendEvents what submits and
	// passes added for the next journal line (guarded by mu); unrecorded the
	// audit rows written to the state but not yet to the recorder (guarded by
	// auditMu, taken after saveMu); outbox the job events not yet published
	// (outbox.go).
	commit     groupCommit
	idem       idemTable
	pendAudit  []Action
	pendIdem   []idemEntry
	pendEvents []schemas.JobEvent
	auditMu    sync.Mutex
	unrecorded []Action
	outbox     outbox
	// frag is the fragmentation figure's samples (fragmentation_record.go).
	frag fragSampler
	// defrag is the fragmentation findings and what policies did on them
	// (defrag.go); guarded by mu.
	defrag defragState
}

// Option configures New.
type Option func(*Service)

// WithClock sets the clock (tests pass a fake one).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithSleep sets how retries wait (tests under testing/synctest need none).
func WithSleep(sleep func(context.Context, time.Duration) error) Option {
	return func(s *Service) { s.sleep = sleep }
}

// WithRecorder sets the audit trail (default: in memory).
func WithRecorder(r Recorder) Option { return func(s *Service) { s.rec = r } }

// WithPublisher sets where job events go (default: nowhere).
func WithPublisher(p Publisher) Option { return func(s *Service) { s.pub = p } }

// WithNotifier sets how owners are told (default: the log).
func WithNotifier(n Notifier) Option { return func(s *Service) { s.notifier = n } }

// WithFindingSource sets where findings are read each pass (default: only those
// given to AddFindings).
func WithFindingSource(f FindingSource) Option { return func(s *Service) { s.source = f } }

// WithExecutor sets the executor for jobs of one source (kubernetes, slurm,
// process, scheduler); source "" is the default for every source without one.
// Jobs submitted to the scheduler itself (source scheduler) are, without an
// executor, stopped by recording it: their owners follow the job events.
func WithExecutor(source string, ex executor.Executor) Option {
	return func(s *Service) { s.execs[source] = ex }
}

// WithJobIDPrefix sets what job numbers start with (default: the start time in
// base 36 and a dot, e.g. sched/nlp/tbq3k0.12, so that no two runs of the
// scheduler hand out the same job key).
func WithJobIDPrefix(p string) Option { return func(s *Service) { s.idPrefix = &p } }

// WithStateFile keeps the queued and running jobs in a JSON file at path and a
// journal of changes beside it (<path>.journal, one fsync'd line per submit,
// finish or pass that changed jobs; compacted into the file when it outgrows
// it), read back by Start, so that a restart keeps the queues and knows what
// runs where. Default: none (a restart starts with empty queues).
func WithStateFile(path string) Option { return func(s *Service) { s.statePath = path } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithMetrics sets the metrics.
func WithMetrics(m *Metrics) Option { return func(s *Service) { s.metrics = m } }

// New builds a service for cfg.
func New(cfg Config, opts ...Option) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler: invalid config:\n%w", err)
	}
	e, err := NewEngine(cfg.Model)
	if err != nil {
		return nil, err
	}
	s := &Service{
		cfg: cfg, engine: e, pushed: newPushedFindings(), memo: map[string]*findingMemo{}, external: map[string]string{},
		now: time.Now, sleep: sleepCtx, rec: NewMemoryRecorder(), pub: NopPublisher{},
		execs: map[string]executor.Executor{}, kick: make(chan struct{}, 1), idem: newIdemTable(),
	}
	s.outbox.cap = DefaultOutboxCap
	WithIdempotency(cfg.Idempotency.TTL, cfg.Idempotency.MaxKeys)(s) // an option given after wins
	for _, o := range opts {
		o(s)
	}
	s.pstate = newPolicyState(cfg.Policies, s.roundWait)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "scheduler")
	if s.notifier == nil {
		s.notifier = LogNotifier{Log: s.log}
	}
	if s.execs[schemas.SourceScheduler] == nil {
		s.execs[schemas.SourceScheduler] = recordOnly{}
	}
	if s.idPrefix == nil {
		p := strconv.FormatInt(s.now().Unix(), 36) + "."
		s.idPrefix = &p
	}
	s.engine.SetIDPrefix(*s.idPrefix)
	return s, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Start reads back the policy steps already taken (so that a restarted scheduler
// does not act on a finding twice, nor forget its rate limits). Run calls it.
func (s *Service) Start(ctx context.Context) error {
	if err := s.loadState(); err != nil {
		return err
	}
	s.recordDurable(ctx) // submit rows a crash may have kept from the recorder
	s.mu.Lock()
	for _, j := range s.engine.LiveJobs() {
		if j.External != nil && j.Resubmits {
			s.external[j.External.Job] = j.ID
		}
	}
	s.mu.Unlock()
	rows, err := s.rec.Actions(ctx, ActionFilter{Since: s.now().Add(-historyWindow), PoliciesOnly: true})
	if err != nil {
		return fmt.Errorf("scheduler: read the audit trail back (policy steps taken): %w", err)
	}
	s.mu.Lock()
	s.pstate.load(rows)
	s.defrag.load(rows, s.now())
	s.mu.Unlock()
	s.log.Info("policy history loaded", "rows", len(rows))
	// A job that ended while the scheduler was down must not keep its GPUs.
	if n := s.recheck(ctx, func(*Job) bool { return true }, "ended while the scheduler was down"); n > 0 {
		s.save(ctx)
	}
	return nil
}

// Run starts the service and runs a pass every Interval, and soon after each
// submit or finish, until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if err := s.Pass(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("pass failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-s.kick:
		}
	}
}

// Pass runs the policies on the findings open now, then admission.
func (s *Service) Pass(ctx context.Context) error {
	s.passMu.Lock()
	defer s.passMu.Unlock()
	start := time.Now()
	s.flushOutbox(ctx) // what failed before, once its backoff is over
	now := s.now()
	s.policyPass(ctx, s.findings(ctx, now), now)
	// Readmitted external jobs end in their own systems: ask after the running ones.
	s.recheck(ctx, func(j *Job) bool { return j.External != nil && j.Suspension() == nil }, "ended in its own system")
	for round := range maxRounds {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.mu.Lock()
		now = s.now()
		decs := s.engine.Schedule(now)
		var defragRows []Action
		if round == 0 {
			var more []Decision
			defragRows, more = s.defragment(now)
			decs = append(decs, more...)
		}
		rows, events, orders := s.describe(decs, now)
		rows = append(defragRows, rows...)
		s.stage(events)
		orders = append(orders, s.resumeOrders(now)...)
		s.updateGauges()
		s.mu.Unlock()
		s.emit(ctx, rows, nil)
		s.sendStaged(ctx)
		if len(orders) == 0 {
			break
		}
		for _, o := range orders {
			s.carryOut(ctx, o)
		}
	}
	s.save(ctx)
	s.sampleFragmentation(ctx, s.now())
	if s.metrics != nil {
		s.metrics.passDuration.Observe(time.Since(start).Seconds())
	}
	return nil
}

// trigger asks Run for a pass soon.
func (s *Service) trigger() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Submit queues a job. A refused one is recorded too (decision reject), and
// with an actor in ctx an accepted one (decision submit). With a job state
// file, it returns once the job and its audit row are on disk (commit.go).
func (s *Service) Submit(ctx context.Context, spec JobSpec) (Job, error) {
	j, _, err := s.SubmitOnce(ctx, spec, "")
	return j, err
}

// SubmitOnce is Submit with an idempotency key (idempotency.go; "": none): a
// retry with the key and the same spec, by the same actor, returns the job the
// first call queued, with replayed true; the key with another spec is
// ErrIdempotencyMismatch.
func (s *Service) SubmitOnce(ctx context.Context, spec JobSpec, key string) (job Job, replayed bool, err error) {
	actor := ActorFrom(ctx)
	if key != "" {
		if err := checkIdemKey(key); err != nil {
			return Job{}, false, err
		}
	}
	err = s.checkSubmit(ctx, spec) // labels naming another team's external job
	s.mu.Lock()
	now := s.now()
	var hash string
	if key != "" {
		hash = specHash(spec)
		if e := s.idem.get(actor, key, now); e != nil {
			return s.replay(ctx, e, hash, spec)
		}
	}
	var j *Job
	if err == nil {
		j, err = s.engine.Submit(spec, now)
	}
	if err != nil {
		s.mu.Unlock()
		// A refused request's names may be what was wrong with it: the row keeps
		// at most a name's length of each.
		clip := func(v string) string { return schemas.Truncate(v, schemas.MaxNameLen) }
		row := Action{Time: now, Decision: DecReject, Outcome: OutcomeSkipped, Reason: err.Error(),
			Queue: clip(spec.Queue), Team: clip(spec.Team), Project: clip(spec.Project), GPUs: spec.GPUs, Card: clip(spec.Card), Actor: actor}
		s.emit(ctx, []Action{row}, nil)
		return Job{}, false, err
	}
	snap := j.Snapshot()
	s.stage([]schemas.JobEvent{s.submitEvent(j, now, "")})
	var row *Action
	if actor != "" {
		r := jobRow(&snap, DecSubmit, "queued", actor, now)
		r.fill()
		row = &r
	}
	var ik *idemEntry
	if key != "" {
		ik = &idemEntry{Actor: actor, Key: key, Body: hash, Job: snap.ID, Time: now}
		s.idem.put(*ik, now)
	}
	if s.statePath == "" {
		s.mu.Unlock()
		var rows []Action
		if row != nil {
			rows = append(rows, *row)
		}
		s.emit(ctx, rows, nil)
		s.sendStaged(ctx)
		s.trigger()
		return snap, false, nil
	}
	s.pendingSubmit(row, ik)
	s.mu.Unlock()
	err = s.durable(ctx)
	s.trigger()
	if err != nil {
		return Job{}, false, notDurable(snap.ID, err)
	}
	return snap, false, nil
}

// replay answers a retried submit with the job its key queued; call with mu
// held, which it releases.
func (s *Service) replay(ctx context.Context, e *idemEntry, hash string, spec JobSpec) (Job, bool, error) {
	if e.Body != hash {
		s.mu.Unlock()
		return Job{}, false, fmt.Errorf("%w: key %s queued job %s with another spec on %s; send a new key for a new job",
			ErrIdempotencyMismatch, schemas.Clip(e.Key), e.Job, e.Time.UTC().Format(time.RFC3339))
	}
	snap := Job{ID: e.Job, Spec: spec, SubmitTime: e.Time}
	if j, ok := s.engine.Job(e.Job); ok {
		snap = j.Snapshot()
	}
	s.mu.Unlock()
	if s.statePath == "" {
		return snap, true, nil
	}
	// The first call may still be waiting on its batch: answer once it is on disk.
	if err := s.durable(ctx); err != nil {
		return Job{}, false, notDurable(e.Job, err)
	}
	return snap, true, nil
}

// Finish ends a job (its owner reports it done, failed or cancelled); with an
// actor in ctx it is recorded (decision finish).
func (s *Service) Finish(ctx context.Context, id, status string) (Job, error) {
	s.mu.Lock()
	now := s.now()
	j, ok := s.engine.Job(id)
	if !ok || j.State == StateFinished {
		s.mu.Unlock()
		if ok {
			return Job{}, fmt.Errorf("%w: job %s has already finished", ErrJobState, id)
		}
		return Job{}, fmt.Errorf("%w %s", ErrUnknownJob, schemas.Clip(id))
	}
	wasRunning := j.Running()
	j, err := s.engine.Finish(j.ID, status, now)
	if err != nil {
		s.mu.Unlock()
		return Job{}, err
	}
	s.forgetExternal(j)
	snap := j.Snapshot()
	var events []schemas.JobEvent
	if j.External == nil && (wasRunning || status == schemas.StatusCancelled) { // its own system reports an external job's end
		ev := s.baseEvent(j, schemas.EventEnd, now)
		ev.Status = status
		events = append(events, ev)
	}
	s.stage(events)
	s.mu.Unlock()
	var rows []Action
	if actor := ActorFrom(ctx); actor != "" {
		rows = append(rows, jobRow(&snap, DecFinish, "reported "+status, actor, now))
	}
	s.emit(ctx, rows, nil)
	s.save(ctx)
	s.trigger()
	return snap, nil
}

// Job returns one job, by ID or attempt key.
func (s *Service) Job(id string) (Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.engine.Job(id)
	if !ok {
		return Job{}, fmt.Errorf("%w %s", ErrUnknownJob, schemas.Clip(id))
	}
	return j.Snapshot(), nil
}

// Jobs lists jobs.
func (s *Service) Jobs(f JobFilter) []Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engine.Jobs(f)
}

// Queues lists the queues with their usage.
func (s *Service) Queues() []QueueStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engine.Queues()
}

// Actions reads the audit trail, with the submit rows on disk that the
// recorder has not yet been given (commit.go): a caller reads its own submit.
func (s *Service) Actions(ctx context.Context, f ActionFilter) ([]Action, error) {
	rows, err := s.rec.Actions(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("scheduler: read the audit trail: %w", err)
	}
	s.auditMu.Lock()
	var extra []Action
	for i := range s.unrecorded {
		if f.match(&s.unrecorded[i]) {
			extra = append(extra, s.unrecorded[i])
		}
	}
	s.auditMu.Unlock()
	return mergeActions(rows, extra, f.Limit), nil
}

// Model returns the model the scheduler runs.
func (s *Service) Model() Model { return s.cfg.Model }

// emit records rows and stages events (see stage: with a job state file they
// wait for the next journal line); a recorder's failure is logged and counted,
// never fatal: the decision has been taken either way. A caller whose events
// tell of a change it made stages them itself, in the same hold of mu.
func (s *Service) emit(ctx context.Context, rows []Action, events []schemas.JobEvent) {
	if len(rows) > 0 {
		for i := range rows {
			rows[i].fill()
			s.metrics.action(&rows[i])
		}
		if err := s.rec.Record(ctx, rows); err != nil {
			s.metrics.inc(recordErrs)
			s.log.Warn("record audit rows", "rows", len(rows), "err", err)
		}
	}
	if len(events) > 0 {
		s.mu.Lock()
		s.stage(events)
		s.mu.Unlock()
		s.sendStaged(ctx)
	}
}

// updateGauges sets the job gauges; call with s.mu held.
func (s *Service) updateGauges() {
	if s.metrics == nil {
		return
	}
	n := map[JobState]int{}
	for _, j := range s.engine.LiveJobs() {
		n[j.State]++
	}
	for _, st := range []JobState{StateQueued, StateAdmitted, StateReclaiming} {
		s.metrics.jobs.WithLabelValues(string(st)).Set(float64(n[st]))
	}
	s.metrics.queueState(s.engine, s.now())
	s.metrics.fragmentation(s.engine)
}

// errNoExecutor means no executor is configured for the job's source.
var errNoExecutor = errors.New("no executor for this job's source")
