package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/schemas"
)

// keepFinished is how many finished jobs the engine remembers for listing.
const keepFinished = 1000

// Engine is the admission engine: queues, quotas, usage and the jobs in them. It
// is pure logic — every method takes the time it runs at, and nothing in it reads
// a clock, sleeps or does I/O — and it is not safe for concurrent use (the Service
// serialises calls).
type Engine struct {
	model Model
	// cards are the resources quotas count, by index: the card types in rank
	// order (cards[:nWhole]), then the MIG resources the model names
	// ("<card>/<profile>"), each of card resCard[k] and profile resProfile[k]
	// (for a card type: itself and ""). A job of whole GPUs is matched to
	// cards[:nWhole] only.
	cards      []Card
	nWhole     int
	resCard    []int
	resProfile []string
	// resMode is a fraction resource's sharing mode ("" for the others):
	// fraction resources ("<card>/<mode>", counted in thousandths) follow the
	// MIG ones (model_fraction.go).
	resMode    []placement.Sharing
	cardIdx    map[string]int
	totalCap   []int
	clusters   []*clusterState
	clusterIdx map[string]int
	pools      map[string]*Pool
	queues     []*queueState
	queueIdx   map[string]*queueState
	priorities map[string]int

	jobs     map[string]*Job // queued and running, by ID
	finished []*Job          // the last keepFinished, oldest first
	seq      uint64
	// idPrefix starts the number part of job IDs (see SetIDPrefix).
	idPrefix string
	cycle    uint64
	// now is the time of the pass Schedule is running.
	now time.Time
	// reclaiming are running jobs chosen to give their GPUs back.
	reclaiming []*Job
	// dirty are the jobs changed since the last TakeDirty: what the next line
	// of the scheduler's job state journal holds (state.go).
	dirty map[*Job]struct{}
	// place places jobs on the model's nodes (nil: the model lists none, and
	// GPUs are counted per card type and cluster).
	place *placer
}

// New builds an engine for a validated copy of m.
func New(m Model) (*Engine, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler: invalid model:\n%w", err)
	}
	e := &Engine{
		model: m, cardIdx: map[string]int{}, clusterIdx: map[string]int{}, pools: map[string]*Pool{},
		queueIdx: map[string]*queueState{}, priorities: map[string]int{}, jobs: map[string]*Job{},
		dirty: map[*Job]struct{}{},
	}
	// Cards in rank order, so that trying them in index order tries the cheapest
	// first.
	e.cards = slices.Clone(m.Cards)
	slices.SortStableFunc(e.cards, func(a, b Card) int {
		return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.MemoryGiB, b.MemoryGiB))
	})
	var err error
	if e.place, err = newPlacer(m); err != nil {
		return nil, fmt.Errorf("scheduler: invalid model:\n%w", err)
	}
	m, _ = m.withCapacity() // validated: the nodes' capacity is the clusters'
	e.addMIGResources(m)
	e.addFractionResources(m)
	nc := len(e.cards)
	e.totalCap = make([]int, nc)
	for i, c := range e.cards {
		e.cardIdx[c.Name] = i
	}
	for i, c := range m.Clusters {
		cs := &clusterState{name: c.Name, capacity: make([]int, nc), used: make([]int, nc)}
		for card, n := range c.Capacity {
			cs.capacity[e.cardIdx[card]] = n
			e.totalCap[e.cardIdx[card]] += n
		}
		e.clusters = append(e.clusters, cs)
		e.clusterIdx[c.Name] = i
	}
	for i := range m.Pools {
		e.pools[m.Pools[i].Name] = &m.Pools[i]
	}
	for _, pc := range m.PriorityClasses {
		e.priorities[pc.Name] = pc.Value
	}
	cohorts := map[string]*cohortState{}
	for _, qc := range m.Queues {
		q := &queueState{
			cfg: qc, pool: e.pools[qc.Pool], weight: qc.Weight,
			nominal: make([]int, nc), borrowLimit: make([]int, nc), lendLimit: make([]int, nc), used: make([]int, nc),
			defaultPriorityName: cmp.Or(qc.DefaultPriorityClass, m.DefaultPriorityClass),
		}
		if q.weight == 0 {
			q.weight = 1
		}
		for k, card := range e.cards {
			quota := qc.Quota[card.Name]
			q.nominal[k] = quota.Nominal
			switch {
			case !q.pool.MayBorrow:
				q.borrowLimit[k] = 0
			case quota.BorrowingLimit != nil:
				q.borrowLimit[k] = *quota.BorrowingLimit
			default:
				q.borrowLimit[k] = unlimited
			}
			switch {
			case !q.pool.MayLend:
				q.lendLimit[k] = 0
			case quota.LendingLimit != nil:
				q.lendLimit[k] = *quota.LendingLimit
			default:
				q.lendLimit[k] = quota.Nominal
			}
		}
		// A queue in no cohort is a cohort of its own: it lends to nobody.
		name := qc.Cohort
		if name == "" {
			name = "queue:" + qc.Name
		}
		c := cohorts[name]
		if c == nil {
			c = &cohortState{name: qc.Cohort, borrowed: make([]int, nc), lendable: make([]int, nc)}
			cohorts[name] = c
		}
		q.cohort = c
		c.queues = append(c.queues, q)
		for k := range e.cards {
			_, l := q.contribution(k, 0)
			c.lendable[k] += l
		}
		e.queues = append(e.queues, q)
		e.queueIdx[qc.Name] = q
	}
	return e, nil
}

// addMIGResources puts the MIG resources m names after the card types.
func (e *Engine) addMIGResources(m Model) {
	e.nWhole = len(e.cards)
	for k := range e.cards {
		e.resCard, e.resProfile = append(e.resCard, k), append(e.resProfile, "")
	}
	keys, card, profile := m.migResources(e.cards[:e.nWhole])
	for i, key := range keys {
		base := e.cards[card[i]]
		mem := 0
		for _, p := range placement.MIGProfiles(base.MemoryGiB) {
			if p.Name == profile[i] {
				mem = p.MemoryGB
			}
		}
		e.cards = append(e.cards, Card{Name: key, MemoryGiB: mem, Rank: base.Rank})
		e.resCard, e.resProfile = append(e.resCard, card[i]), append(e.resProfile, profile[i])
	}
}

// jobRes is the resource a running job holds: its card type, or its card's
// MIG resource of its profile.
func (e *Engine) jobRes(j *Job) (int, bool) {
	name := j.Card
	if j.Spec.MIGProfile != "" {
		name = MIGResource(j.Card, j.Spec.MIGProfile)
	}
	if j.Spec.GPUFraction > 0 {
		name = FractionResource(j.Card, placement.Sharing(j.Spec.Sharing))
	}
	k, ok := e.cardIdx[name]
	return k, ok
}

// resOf is jobRes's index (a running job's resource is always known).
func (e *Engine) resOf(j *Job) int {
	k, _ := e.jobRes(j)
	return k
}

// SetIDPrefix makes job IDs sched/<team>/<prefix><n>. Job keys must be unique
// across the pool's history (job events of one key are merged into one job), and
// the engine's count starts at 1 each time it is built: a scheduler gives each run
// its own prefix.
func (e *Engine) SetIDPrefix(p string) { e.idPrefix = strings.ReplaceAll(p, "/", "_") }

// Submit validates spec and queues it. Errors wrap ErrUnknownQueue, ErrNotAllowed,
// ErrInvalidJob or ErrOverQuota and say what to change.
func (e *Engine) Submit(spec JobSpec, now time.Time) (*Job, error) {
	if _, err := spec.checkIdents(); err != nil {
		return nil, err
	}
	q := e.queueIdx[spec.Queue]
	if q == nil {
		return nil, fmt.Errorf("%w %q (queues: %s)", ErrUnknownQueue, spec.Queue, e.queueNames())
	}
	if q.cfg.Team != "" && spec.Team != q.cfg.Team {
		return nil, fmt.Errorf("%w: queue %s is team %s's, not %q", ErrNotAllowed, q.cfg.Name, q.cfg.Team, spec.Team)
	}
	if q.cfg.Project != "" && spec.Project != q.cfg.Project {
		return nil, fmt.Errorf("%w: queue %s is project %s's, not %q", ErrNotAllowed, q.cfg.Name, q.cfg.Project, spec.Project)
	}
	j := &Job{Spec: spec, Pool: q.cfg.Pool, q: q}
	cards, err := e.checkSpec(j)
	if err != nil {
		return nil, err
	}
	if cards, err = e.placeable(j, cards); err != nil {
		return nil, err
	}
	if err := e.checkEverFits(j, cards); err != nil {
		return nil, err
	}
	if err := e.compile(j); err != nil {
		return nil, err
	}
	e.seq++
	j.ID = "sched/" + strings.ReplaceAll(cmp.Or(spec.Team, "_"), "/", "_") + "/" + e.idPrefix + strconv.FormatUint(e.seq, 10)
	j.Seq, j.Attempt, j.State = e.seq, 1, StateQueued
	j.SubmitTime, j.QueuedAt = now, now
	j.PlacementReason = e.whyWaiting(j)
	if j.Spec.Labels != nil {
		j.Spec.Labels = cloneMap(j.Spec.Labels)
	}
	e.jobs[j.ID] = j
	e.observeShape(j)
	q.insertPending(j)
	e.touch(j)
	return j, nil
}

// checkSpec resolves the job's priority and checks its fields; it returns the
// card types the job may run on, cheapest first.
func (e *Engine) checkSpec(j *Job) ([]int, error) {
	s := &j.Spec
	bad := func(format string, args ...any) ([]int, error) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidJob, fmt.Sprintf(format, args...))
	}
	if err := checkFraction(s); err != nil {
		return nil, err
	}
	if s.GPUs < 1 {
		return bad("gpus: %d; ask for at least 1", s.GPUs)
	}
	if s.GPUsPerNode < 0 || s.GPUsPerNode > 0 && s.GPUs%s.GPUsPerNode != 0 {
		return bad("gpus_per_node: %d must be positive and divide gpus %d", s.GPUsPerNode, s.GPUs)
	}
	if s.MinMemoryGiB < 0 {
		return bad("min_memory_gib: %d is negative", s.MinMemoryGiB)
	}
	limit, err := schemas.Seconds("time_limit_s", s.TimeLimitS)
	if err != nil {
		return bad("%v", err)
	}
	if max := j.q.pool.MaxJobDuration; max > 0 && limit > max {
		return bad("time_limit_s: %s is past pool %s's maximum job duration %s", limit, j.Pool, max)
	}
	w, err := parseStartWindow(s)
	if err != nil {
		return bad("%v", err)
	}
	j.window = w
	switch s.Workload {
	case "", schemas.WorkloadTraining, schemas.WorkloadInference, schemas.WorkloadBatchInference, schemas.WorkloadDev, schemas.WorkloadOther:
	default:
		return bad("workload %q is not training, inference, batch-inference, dev or other", s.Workload)
	}
	if err := e.resolveClusters(j); err != nil {
		return nil, err
	}
	class := cmp.Or(s.PriorityClass, j.q.defaultPriorityName)
	if class != "" {
		p, ok := e.priorities[class]
		if !ok {
			return bad("priority class %q does not exist (classes: %s)", class, strings.Join(e.model.priorityClassNames(), ", "))
		}
		j.Priority = p
	}
	if s.MIGProfile != "" {
		return e.migCards(s)
	}
	if s.GPUFraction > 0 {
		return e.fractionCards(s)
	}
	var cards []int
	if s.Card != "" {
		k, ok := e.cardIdx[s.Card]
		if !ok || k >= e.nWhole {
			return bad("card %q does not exist (cards: %s)", s.Card, strings.Join(e.model.cardNames(), ", "))
		}
		if e.cards[k].MemoryGiB < s.MinMemoryGiB {
			return bad("card %s has %d GiB, less than the %d GiB asked for", s.Card, e.cards[k].MemoryGiB, s.MinMemoryGiB)
		}
		return []int{k}, nil
	}
	for k, c := range e.cards[:e.nWhole] {
		if c.MemoryGiB >= s.MinMemoryGiB {
			cards = append(cards, k)
		}
	}
	if len(cards) == 0 {
		return bad("no card type has %d GiB or more", s.MinMemoryGiB)
	}
	return cards, nil
}

// migCards is the MIG resources a job of MIG instances may run on: its card's
// of its profile, or (no card) every card's the model names of that profile,
// cheapest card first.
func (e *Engine) migCards(s *JobSpec) ([]int, error) {
	bad := func(format string, args ...any) ([]int, error) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidJob, fmt.Sprintf(format, args...))
	}
	if s.MinMemoryGiB != 0 {
		return bad("min_memory_gib: %d with mig_profile %s: the profile names the instance's memory; leave min_memory_gib out", s.MinMemoryGiB, s.MIGProfile)
	}
	if s.Card != "" {
		c, ok := e.cardIdx[s.Card]
		if !ok || c >= e.nWhole {
			return bad("card %q does not exist (cards: %s)", s.Card, strings.Join(e.model.cardNames(), ", "))
		}
		if why := migProfileProblem(e.cards[c], s.MIGProfile); why != "" {
			return bad("mig_profile: %s", why)
		}
		k, ok := e.cardIdx[MIGResource(s.Card, s.MIGProfile)]
		if !ok {
			return bad("mig_profile: no cluster has %s instances of %s (the model names no %s)", s.Card, s.MIGProfile, MIGResource(s.Card, s.MIGProfile))
		}
		return []int{k}, nil
	}
	var cards []int
	for k := e.nWhole; k < len(e.cards); k++ {
		if e.resProfile[k] == s.MIGProfile {
			cards = append(cards, k)
		}
	}
	if len(cards) == 0 {
		return bad("mig_profile: no cluster has instances of %q (the model's MIG resources: %s)", s.MIGProfile, e.migNames())
	}
	return cards, nil
}

// migNames lists the model's MIG resources ("none" when it has none).
func (e *Engine) migNames() string {
	var names []string
	for k, c := range e.cards[e.nWhole:] {
		if e.resProfile[e.nWhole+k] != "" {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// checkEverFits refuses a job no state of the pool could ever admit: larger than
// its queue's quota plus borrowing, or than any one cluster's cards.
func (e *Engine) checkEverFits(j *Job, cards []int) error {
	var why []string
	for _, k := range cards {
		limit := j.q.maxEver(k)
		if !j.Spec.preemptible() {
			limit = j.q.nominal[k] // it may not borrow (jobQuotaFits)
		}
		most := 0
		for ci, c := range e.clusters {
			if j.mayUse(ci) {
				most = max(most, c.capacity[k])
			}
		}
		if j.amount() <= min(limit, most) {
			j.cards = cards
			return nil
		}
		switch {
		case j.amount() > limit && !j.Spec.preemptible():
			why = append(why, fmt.Sprintf("%s: queue %s's nominal quota is %d, and a job that is not preemptible may not borrow",
				e.cards[k].Name, j.q.cfg.Name, limit))
		case j.amount() > limit:
			why = append(why, fmt.Sprintf("%s: queue %s can hold at most %d (nominal %d + borrowable %d)",
				e.cards[k].Name, j.q.cfg.Name, limit, j.q.nominal[k], limit-j.q.nominal[k]))
		default:
			why = append(why, fmt.Sprintf("%s: no cluster has more than %d", e.cards[k].Name, most))
		}
	}
	return fmt.Errorf("%w: %d %s can never run (%s); ask for fewer %[3]s, another card, or a bigger quota",
		ErrOverQuota, j.amount(), j.Spec.unit(), strings.Join(why, "; "))
}

// Finish ends a job: a running one gives its GPUs back, a queued one leaves its
// queue. status is succeeded, failed or cancelled.
func (e *Engine) Finish(id, status string, now time.Time) (*Job, error) {
	j := e.jobs[id]
	if j == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownJob, id)
	}
	switch status {
	case schemas.StatusSucceeded, schemas.StatusFailed, schemas.StatusCancelled:
	default:
		return nil, fmt.Errorf("%w: status %s is not succeeded, failed or cancelled", ErrInvalidJob, schemas.Clip(status))
	}
	if j.Running() {
		e.release(j)
		e.unplace(j)
		j.q.running = removeJob(j.q.running, j)
		e.endReclaim(j)
	} else {
		j.q.pending = removeJob(j.q.pending, j)
	}
	for _, v := range e.reclaiming {
		if v.reclaimFor == j {
			v.reclaimFor = nil
			e.touch(v)
		}
	}
	e.touch(j)
	j.State, j.Status, j.EndTime = StateFinished, status, now
	delete(e.jobs, id)
	e.finished = append(e.finished, j)
	if len(e.finished) > keepFinished {
		e.finished = slices.Delete(e.finished, 0, len(e.finished)-keepFinished)
	}
	return j, nil
}

// Requeue puts a stopped job back in its queue as its next attempt, at the place
// it had: its priority and original submission order are kept. Call it once the
// executor has stopped the job, never before.
func (e *Engine) Requeue(id string, now time.Time) (*Job, error) {
	j := e.jobs[id]
	if j == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownJob, id)
	}
	if !j.Running() {
		return nil, fmt.Errorf("%w: job %s is %s, not running", ErrJobState, id, j.State)
	}
	e.release(j)
	e.unplace(j)
	j.q.running = removeJob(j.q.running, j)
	e.endReclaim(j)
	j.Placement, j.ExpectedStart = nil, time.Time{}
	j.State, j.Attempt, j.QueuedAt = StateQueued, j.Attempt+1, now
	j.resetStopFailures()
	j.Card, j.Cluster, j.Borrowed, j.AdmitTime = "", "", 0, time.Time{}
	j.WaitReason, j.waitBlock, j.PlacementReason = "", block{}, e.whyWaiting(j)
	j.q.insertPending(j)
	e.touch(j)
	return j, nil
}

// KeepRunning undoes a reclaim that could not be carried out (the executor failed):
// the job keeps its GPUs and is admitted as before.
func (e *Engine) KeepRunning(id string) error {
	j := e.jobs[id]
	if j == nil {
		return fmt.Errorf("%w %q", ErrUnknownJob, id)
	}
	if j.State != StateReclaiming {
		return fmt.Errorf("%w: job %s is %s, not reclaiming", ErrJobState, id, j.State)
	}
	e.endReclaim(j)
	j.State, j.Held = StateAdmitted, false
	e.touch(j)
	return nil
}

// Confirm records that the executor stopped a reclaiming job: its GPUs go back,
// and it is requeued (or finished), by the first Schedule at or after its
// ReclaimBy.
func (e *Engine) Confirm(id string) error {
	j := e.jobs[id]
	if j == nil {
		return fmt.Errorf("%w %q", ErrUnknownJob, id)
	}
	if j.State != StateReclaiming {
		return fmt.Errorf("%w: job %s is %s, not reclaiming", ErrJobState, id, j.State)
	}
	j.confirmed = true
	e.touch(j)
	return nil
}

// StartReclaim orders a running job stopped on a policy's decision (an idle job).
// The caller stops it through an executor, with the job's ReclaimBy-now as its
// grace, and calls Confirm (the next Schedule at or after ReclaimBy then
// requeues it, or finishes it when requeue is false), or KeepRunning if the stop
// failed. A checkpointable job being requeued gets its pool's reclaim grace, as
// in a reclaim for a lender. A requeued job is held until its owner resumes it
// when hold is set (a hung job: run again, it would likely hang again) or it is
// dev work.
func (e *Engine) StartReclaim(id, reason string, requeue, hold bool, now time.Time) (*Job, error) {
	j := e.jobs[id]
	if j == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownJob, id)
	}
	if j.State != StateAdmitted {
		return nil, fmt.Errorf("%w: job %s is %s, not admitted", ErrJobState, id, j.State)
	}
	var grace time.Duration
	if requeue {
		grace = j.reclaimGrace()
	}
	e.markReclaim(j, nil, reason, now.Add(grace))
	j.noRequeue = !requeue
	j.Held = requeue && (hold || j.Interactive())
	e.touch(j)
	return j, nil
}

// Interactive reports whether j is dev work, held after a policy reclaim until
// its owner resumes it.
func (j *Job) Interactive() bool { return j.Spec.Workload == schemas.WorkloadDev || j.Pool == PoolDev }

// Resume lets a held job be admitted again (its owner is back).
func (e *Engine) Resume(id string) (*Job, error) {
	j := e.jobs[id]
	if j == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownJob, id)
	}
	if !j.Held || j.State == StateFinished {
		return nil, fmt.Errorf("%w: job %s is %s and not held: there is nothing to resume", ErrJobState, id, j.State)
	}
	j.Held = false
	if j.State == StateQueued {
		j.WaitReason = ""
	}
	e.touch(j)
	return j, nil
}

// markReclaim moves j to reclaiming, to be stopped at by, for job forJob (nil:
// for a policy).
func (e *Engine) markReclaim(j, forJob *Job, reason string, by time.Time) {
	j.State, j.ReclaimBy, j.ReclaimReason, j.reclaimFor = StateReclaiming, by, reason, forJob
	e.reclaiming = append(e.reclaiming, j)
	e.touch(j)
	if forJob != nil {
		forJob.pendingVictims++
	}
}

// endReclaim forgets that j was being reclaimed.
func (e *Engine) endReclaim(j *Job) {
	if j.State != StateReclaiming {
		return
	}
	e.reclaiming = removeJob(e.reclaiming, j)
	if j.reclaimFor != nil {
		j.reclaimFor.pendingVictims--
	}
	j.reclaimFor, j.ReclaimBy, j.ReclaimReason = nil, time.Time{}, ""
	j.confirmed, j.noRequeue = false, false
	e.touch(j)
}

// Job returns the job with this ID (or attempt key), including recently finished
// ones.
func (e *Engine) Job(id string) (*Job, bool) {
	if j, ok := e.jobs[id]; ok {
		return j, true
	}
	if base, _, ok := CutAttempt(id); ok {
		if j, ok := e.jobs[base]; ok && j.AttemptKey() == id {
			return j, true
		}
	}
	for i := len(e.finished) - 1; i >= 0; i-- {
		if e.finished[i].ID == id {
			return e.finished[i], true
		}
	}
	return nil, false
}

// CutAttempt splits "sched/team/12/3" into its ID and attempt.
func CutAttempt(key string) (id string, attempt int, ok bool) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 || strings.Count(key, "/") < 3 {
		return "", 0, false
	}
	n, err := strconv.Atoi(key[i+1:])
	if err != nil {
		return "", 0, false
	}
	return key[:i], n, true
}

// Pool returns the pool named name.
func (e *Engine) Pool(name string) (*Pool, bool) {
	p, ok := e.pools[name]
	return p, ok
}

// Model returns the model the engine was built from.
func (e *Engine) Model() Model { return e.model }

func (e *Engine) queueNames() string {
	names := make([]string, 0, len(e.queues))
	for i, q := range e.queues {
		if i == 20 {
			names = append(names, fmt.Sprintf("… %d more; see gpupool queue ls", len(e.queues)-20))
			break
		}
		names = append(names, q.cfg.Name)
	}
	return strings.Join(names, ", ")
}

func (e *Engine) clusterNames() []string {
	out := make([]string, len(e.clusters))
	for i, c := range e.clusters {
		out[i] = c.name
	}
	return out
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
