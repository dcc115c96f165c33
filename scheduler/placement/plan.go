package placement

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Policy is how a pass orders its queue when a job does not fit.
type Policy string

// Policies.
const (
	// StrictFIFO: the first job that does not fit blocks everything behind it.
	StrictFIFO Policy = "strict-fifo"
	// BestEffortFIFO: a job that does not fit is skipped and the next one tried
	// (Kueue's default). Large jobs can wait forever behind a stream of small ones.
	BestEffortFIFO Policy = "best-effort-fifo"
	// Backfill (EASY, per resource domain): the first job that does not fit in
	// each domain — a cluster's GPUs of one card type, which no gang shares with
	// another domain — gets a reservation on the nodes where it fits soonest; a
	// job behind it starts only outside the reservations or if its time limit
	// ends before the reservation it would use starts. One reservation for the
	// whole fleet would let a head that keeps not fitting in one domain starve
	// the first jobs of every other domain.
	Backfill Policy = "backfill"
	// ConservativeBackfill: every waiting job (up to PlanConfig.Depth) gets a
	// reservation in order, and a job starts now only if it delays none of them.
	ConservativeBackfill Policy = "conservative-backfill"
)

// PlanConfig configures a planning pass.
type PlanConfig struct {
	Policy Policy `yaml:"policy" json:"policy"`
	// Depth is the most reservations a pass makes: conservative backfill's
	// (0: 64), and backfill's (0: one per resource domain, so no more than the
	// fleet's clusters × card types). Jobs past it start only where they delay
	// no reservation.
	Depth int `yaml:"depth" json:"depth"`
	// MinAgeReserve is how long a job waits before it may hold a reservation
	// (Slurm's bf_min_age_reserve): a job that does not fit and has waited less
	// is skipped, as under best-effort FIFO, and the first job past it that does
	// not fit gets the reservation. Reserving for a job that would start soon
	// anyway holds nodes idle while they drain; the bound keeps every wait
	// bounded (by it, plus the reservation's drain). 0: reserve at once.
	MinAgeReserve time.Duration `yaml:"min_age_reserve" json:"min_age_reserve"`
	// Slack relaxes backfill (Ward, Mahood and West's relaxed backfilling,
	// anchored): a job may run on a reservation's GPUs if its time limit ends
	// by the reservation's first promised start plus Slack times the wait
	// promised then (promise − queued). The reserved job then starts by that
	// bound at the latest, however many passes recompute its reservation, so
	// every wait stays bounded; 0 (default): EASY, no job may delay it at all.
	// Needs Pending.Queued and Pending.Prior to carry the promise.
	Slack float64 `yaml:"slack" json:"slack"`
	// PackOnly places a job that fits on one node by bin-packing alone (the
	// fullest node that fits). By default the engine learns the recent mix of
	// job shapes per card type and takes, among the nodes that fit, the one
	// whose remaining free GPUs those shapes can best use (shapes.go), ties
	// to the fullest.
	PackOnly bool `yaml:"pack_only" json:"pack_only"`
	// Replan (backfill and conservative backfill) lets a job that fits now
	// only on GPUs a reservation of the pass holds start anyway when every
	// reservation it would overlap can be placed again, with the job running,
	// to start no later than it did (the same or an earlier start, its promise
	// and hold kept, around every other reservation); if one cannot, the job
	// waits as before. The value bounds the extra work per pass: how many
	// placements overlapping a reservation a pass may try (a placement
	// overlapping each such reservation alone, the latest held first, then
	// one overlapping any; each try searches a start for every reservation it
	// overlaps, and a pass searches at most 4× as many placements); 0
	// (default): off. A fraction never tries.
	Replan int `yaml:"replan" json:"replan"`
}

// DefaultPlanConfig is conservative backfill: every job that does not fit
// gets a reservation, in order (up to Depth), as Slurm's backfill gives one
// to each job it tests.
func DefaultPlanConfig() PlanConfig { return PlanConfig{Policy: ConservativeBackfill} }

// Validate checks the configuration.
func (c PlanConfig) Validate() error {
	switch c.Policy {
	case StrictFIFO, BestEffortFIFO, Backfill, ConservativeBackfill:
	default:
		return fmt.Errorf("policy: %q is none of %s, %s, %s, %s", c.Policy, StrictFIFO, BestEffortFIFO, Backfill, ConservativeBackfill)
	}
	if c.Depth < 0 {
		return fmt.Errorf("depth: %d is negative", c.Depth)
	}
	if c.MinAgeReserve < 0 {
		return fmt.Errorf("min_age_reserve: %v is negative", c.MinAgeReserve)
	}
	if c.Slack < 0 || c.Slack > 10 || c.Slack != c.Slack {
		return fmt.Errorf("slack: %v is outside 0–10", c.Slack)
	}
	if c.Replan < 0 || c.Replan > maxReplan {
		return fmt.Errorf("replan: %d is outside 0–%d", c.Replan, maxReplan)
	}
	return nil
}

// Compiled is a request checked against a state's fleet, ready to plan.
type Compiled struct {
	r  Request
	c  creq
	ix *index
}

// Request returns the request as given.
func (c Compiled) Request() Request { return c.r }

// Compile checks r against the fleet: well formed, and fitting the empty fleet
// (ErrNeverFits otherwise).
func (s *State) Compile(r Request) (Compiled, error) {
	c, err := s.ix.compile(r)
	if err != nil {
		return Compiled{}, err
	}
	if !s.ix.fitsEmpty(&c) {
		return Compiled{}, fmt.Errorf("%w: %d %s of %v", ErrNeverFits, r.GPUs, unitName(r), r.Cards)
	}
	return Compiled{r: r, c: c, ix: s.ix}, nil
}

func unitName(r Request) string {
	if r.Fraction > 0 {
		return fmt.Sprintf("%d/1000 %s share of one GPU", r.Fraction, r.Sharing)
	}
	if r.MIGProfile != "" {
		return r.MIGProfile + " instances"
	}
	return "GPUs"
}

// Pending is a queued job, in the order the caller wants them considered
// (priority, fair share, submission).
type Pending struct {
	ID  string
	Req Compiled
	// TimeLimit is how long the job may run once started (its own limit or its
	// pool's maximum duration); 0: none, so it may hold its GPUs forever.
	TimeLimit time.Duration
	// Queued is when the job joined the queue, for PlanConfig.MinAgeReserve;
	// zero: unknown, so it counts as old enough to reserve.
	Queued time.Time
	// Prior is the reservation the job held after the previous pass (nil:
	// none). Until its turn in this pass, it holds: a job placed before it (a
	// job owed reclaimed GPUs, say, which the caller orders first) is kept off
	// its GPUs unless its time limit ends by the reservation's start, as it
	// would have been behind it. At its turn it is dropped and the job fits or
	// reserves afresh.
	Prior *Reservation
}

// WaitKind is why a job does not start.
type WaitKind string

// Wait kinds.
const (
	WaitNone WaitKind = ""
	// WaitNoRoom: it does not fit now (best-effort FIFO, or past the reservation
	// depth).
	WaitNoRoom WaitKind = "no-room"
	// WaitReserved: it holds a reservation, and starts at its ExpectedStart at the
	// latest if running jobs keep their time limits.
	WaitReserved WaitKind = "reserved"
	// WaitBehindReservation: it would fit only on reserved GPUs, and its time
	// limit runs past the reservation's start (or it has none).
	WaitBehindReservation WaitKind = "behind-reservation"
	// WaitBehindHead: strict FIFO, and a job ahead of it does not fit.
	WaitBehindHead WaitKind = "behind-head"
	// WaitNoEstimate: it fits only once jobs with no time limit end, so no start
	// can be promised.
	WaitNoEstimate WaitKind = "no-estimate"
	// WaitRefused: it fits, but the caller's admit check (quota) said no.
	WaitRefused WaitKind = "refused"
)

// Decision is what a pass decided for one pending job.
type Decision struct {
	ID    string
	Start bool
	// Placement is where it starts (Start) or is reserved.
	Placement Placement
	Why       WaitKind
	// refusal is the admit check's reason (WaitRefused); blocker the job a
	// strict FIFO waits behind; first the first reservation of the pass; req
	// the request. Reason() formats them only when asked: formatting every
	// waiting job's reason in every pass is what would cost.
	refusal, blocker string
	first            *Reservation
	req              *Request
	// ExpectedStart is now for a start, the reservation's start for a reserved
	// job, the head's estimate under strict FIFO, and zero when unknown.
	ExpectedStart time.Time
	Reservation   *Reservation
}

// Reservation holds GPUs for a waiting job from Start: jobs whose time limit
// runs past Hold (Start, unless PlanConfig.Slack relaxes it) may not be placed
// on them.
type Reservation struct {
	Job   string
	Start time.Time
	// End is Start plus the job's time limit; zero: no limit.
	End       time.Time
	Placement Placement
	// Promise is the start first promised to the job (kept across passes
	// through Pending.Prior); Hold is when jobs on its GPUs must have ended:
	// Start, or with slack Promise + Slack × (Promise − queued), never before
	// Start.
	Promise, Hold time.Time
}

// overlaps reports whether the reservation keeps a job started at from with
// limit d (0: none) off its GPUs: the job would still run at Hold.
func (r *Reservation) overlaps(from time.Time, d time.Duration) bool {
	if !r.End.IsZero() && !r.End.After(from) {
		return false
	}
	return d == 0 || r.hold().Before(from.Add(d))
}

// hold is Hold, or Start for a reservation made without one.
func (r *Reservation) hold() time.Time {
	if r.Hold.IsZero() {
		return r.Start
	}
	return r.Hold
}

// AdmitFunc is asked before a job that fits is started (the engine's quota);
// false with a reason leaves the job waiting (WaitRefused) and skips it.
type AdmitFunc func(p *Pending, pl Placement) (ok bool, reason string)

// Plan runs one pass at now over queue, in order: jobs that may start are
// placed at once (expected to end at now + their time limit), the others get a
// reservation or a reason. admit may be nil.
func (s *State) Plan(now time.Time, queue []Pending, cfg PlanConfig, admit AdmitFunc) []Decision {
	depth := 0
	p := planner{s: s, now: now, slack: cfg.Slack}
	switch cfg.Policy {
	case Backfill:
		nd := len(s.ix.clusters) * len(s.ix.cards)
		depth = nd
		if cfg.Depth > 0 {
			depth = min(cfg.Depth, nd)
		}
		p.perDomain = make([]*Reservation, nd)
		p.tries = estimateTries * nd
	case ConservativeBackfill:
		depth = cmp.Or(cfg.Depth, 64)
	}
	if cfg.Replan > 0 && (cfg.Policy == Backfill || cfg.Policy == ConservativeBackfill) {
		p.replan, p.replanFinds = cfg.Replan, 4*cfg.Replan
		p.owner = map[*Reservation]int{}
	}
	out := make([]Decision, 0, len(queue))
	p.holdPriors(queue)
	var blocker string
	for i := range queue {
		q := &queue[i]
		d := Decision{ID: q.ID}
		r := &q.Req.c
		p.dropPrior(q.Prior)
		if blocker != "" {
			d.Why, d.blocker = WaitBehindHead, blocker
			out = append(out, d)
			continue
		}
		f := finder{ix: s.ix, v: &s.v, st: s, m: p.maskFor(q.TimeLimit), buf: p.buf}
		pl, ok := f.find(r)
		p.buf = f.buf
		if !ok && p.replan > 0 && r.frac == 0 && len(p.res) > 0 {
			if pl, started, refusal := p.replanFor(queue, i, out, admit); started {
				d.Start, d.Placement, d.ExpectedStart = true, pl, now
				out = append(out, d)
				continue
			} else if refusal != "" {
				d.Why, d.refusal = WaitRefused, refusal
				out = append(out, d)
				continue
			}
		}
		if ok {
			if admit != nil {
				if yes, why := admit(q, pl); !yes {
					d.Why, d.refusal = WaitRefused, why
					out = append(out, d)
					continue
				}
			}
			p.start(q, pl)
			d.Start, d.Placement, d.ExpectedStart = true, pl, now
			out = append(out, d)
			continue
		}
		d.req = &q.Req.r
		switch {
		case r.frac > 0:
			// A fraction waits for room without a reservation (share.go).
			d.Why = WaitNoRoom
			if cfg.Policy == StrictFIFO {
				blocker = q.ID
			}
		case cfg.Policy == StrictFIFO:
			blocker = q.ID
			p.estimate(q, &d, false)
		case cfg.Policy == BestEffortFIFO:
			d.Why = WaitNoRoom
		case cfg.Policy == Backfill:
			p.backfill(q, &d, depth, q.Queued.IsZero() || now.Sub(q.Queued) >= cfg.MinAgeReserve)
		case p.made < depth && (q.Queued.IsZero() || now.Sub(q.Queued) >= cfg.MinAgeReserve):
			p.estimate(q, &d, true)
		case p.made == 0:
			d.Why = WaitNoRoom // too young to reserve: skipped, as best-effort
		default:
			d.Why, d.first = WaitNoRoom, p.res[0]
		}
		if d.Reservation != nil && p.owner != nil {
			p.owner[d.Reservation] = i
		}
		out = append(out, d)
	}
	return out
}

// holdPriors makes the queue's prior reservations hold from the pass's start.
func (p *planner) holdPriors(queue []Pending) {
	for i := range queue {
		if r := queue[i].Prior; r != nil && len(r.Placement.units) > 0 {
			p.insert(r)
			if p.owner != nil {
				p.owner[r] = i
			}
		}
	}
}

// dropPrior ends a prior reservation at its job's turn.
func (p *planner) dropPrior(r *Reservation) {
	if r == nil {
		return
	}
	if m := p.moved[r]; m != nil {
		r = m // re-planned in this pass
	}
	if i := slices.Index(p.res, r); i >= 0 {
		p.res = slices.Delete(p.res, i, i+1)
		p.masks = nil
	}
}

// Reason says in words why the job waits ("" for a start).
func (d Decision) Reason() string {
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch d.Why {
	case WaitBehindHead:
		return "strict FIFO: waits behind " + d.blocker + ", which does not fit"
	case WaitRefused:
		return d.refusal
	case WaitNoEstimate:
		return "fits only once jobs with no time limit end: no start can be promised for " + describe(*d.req)
	case WaitReserved:
		return fmt.Sprintf("reserved %s from %s (when running jobs reach their time limits)", d.Placement, at(d.ExpectedStart))
	case WaitBehindReservation:
		return fmt.Sprintf("no room for %s outside the reservation for %s, which starts at %s, unless its time limit ended by then",
			describe(*d.req), d.first.Job, at(d.first.Start))
	case WaitNoRoom:
		if !d.ExpectedStart.IsZero() {
			return fmt.Sprintf("no room now for %s; expected to fit by %s", describe(*d.req), at(d.ExpectedStart))
		}
		if d.first != nil {
			return fmt.Sprintf("no room now for %s, around the pass's reservations", describe(*d.req))
		}
		return "no room now for " + describe(*d.req)
	}
	return ""
}

func describe(r Request) string {
	var b strings.Builder
	if r.Fraction > 0 {
		fmt.Fprintf(&b, "a %s of %s", unitName(r), strings.Join(r.Cards, "|"))
	} else {
		fmt.Fprintf(&b, "%d %s of %s", r.GPUs, unitName(r), strings.Join(r.Cards, "|"))
	}
	if r.GPUsPerNode > 0 {
		fmt.Fprintf(&b, ", %d per node", r.GPUsPerNode)
	}
	if r.Level != "" {
		fmt.Fprintf(&b, ", %s %s", r.Level, cmp.Or(r.LevelMode, Required))
	}
	return b.String()
}

// estimateTries bounds backfill's searches for a reservation per pass, per
// resource domain (Slurm's bf_max_job_test): a job that may use several domains
// can be estimated to fit soonest in one that already holds a reservation, and
// gets none; past the bound, such jobs are not searched for.
const estimateTries = 4

// domainOf is the resource domain (cluster, card type) a placement lies in.
func (p *planner) domainOf(pl Placement) int {
	n := &p.s.ix.nodes[pl.units[0].node]
	return int(n.cluster)*len(p.s.ix.cards) + int(n.card)
}

// domainsOf calls fn for each resource domain r may be placed in, until it
// returns false.
func (p *planner) domainsOf(r *creq, fn func(d int) bool) {
	nc := len(p.s.ix.cards)
	for c := range p.s.ix.clusters {
		if !r.allows(c) {
			continue
		}
		for _, k := range r.cards {
			if !fn(c*nc + int(k)) {
				return
			}
		}
	}
}

// backfill decides for a job that does not fit now under EASY backfill per
// resource domain: it gets a reservation when one of the domains it may use
// holds none yet (and it is old enough, and the pass's depth and tries allow),
// and its soonest fit lies in such a domain. Otherwise it waits behind the
// reservation of a domain it may use, or for room.
func (p *planner) backfill(q *Pending, d *Decision, depth int, old bool) {
	r := &q.Req.c
	var held *Reservation
	free := false
	p.domainsOf(r, func(dm int) bool {
		if rs := p.perDomain[dm]; rs != nil {
			held = cmp.Or(held, rs)
		} else {
			free = true
		}
		return true
	})
	if free && old && p.made < depth && p.tries > 0 {
		p.tries--
		p.estimate(q, d, false)
		if d.Why == WaitNoEstimate {
			return
		}
		dm := p.domainOf(d.Placement)
		if rs := p.perDomain[dm]; rs != nil {
			// It fits soonest where another job already holds the reservation.
			d.Placement, d.ExpectedStart = Placement{}, time.Time{}
			d.Why, d.first = WaitBehindReservation, rs
			return
		}
		p.reserve(q, d)
		p.perDomain[dm] = d.Reservation
		return
	}
	if held == nil {
		d.Why = WaitNoRoom // too young to reserve, or past the depth: skipped, as best-effort
		return
	}
	d.Why, d.first = WaitBehindReservation, held
}

// planner is one pass's reservations and masks.
type planner struct {
	s   *State
	now time.Time
	// perDomain is backfill's reservation in each resource domain
	// (cluster × card types + card), nil where none; tries is how many more
	// searches for a reservation the pass may make.
	perDomain []*Reservation
	tries     int
	// made is how many reservations the pass made (res also holds the
	// queue's prior ones until their jobs' turns).
	made int
	// slack is PlanConfig.Slack.
	slack float64
	// res are the pass's reservations, by hold; masks[k] masks the first k
	// (built on demand, dropped when a reservation is added).
	res   []*Reservation
	masks []*mask
	buf   []cand
	// replan is how many more placements overlapping reservations may be
	// tried (PlanConfig.Replan), replanFinds how many more may be searched;
	// owner maps each reservation in res to its
	// job's index in the queue (set when replan is on); moved maps a later
	// job's prior reservation to the one that replaced it in res.
	replan, replanFinds int
	owner               map[*Reservation]int
	moved               map[*Reservation]*Reservation
}

// maskFor is the mask of the reservations a job of time limit d started now
// would overlap: a prefix of res, as they are ordered by hold.
func (p *planner) maskFor(d time.Duration) *mask {
	k := 0
	for _, r := range p.res {
		if r.overlaps(p.now, d) {
			k++
		} else {
			break
		}
	}
	if k == 0 {
		return nil
	}
	if p.masks == nil {
		p.masks = make([]*mask, len(p.res)+1)
	}
	if p.masks[k] == nil {
		m := newMask(p.s.ix)
		for _, r := range p.res[:k] {
			for _, u := range r.Placement.units {
				m.add(u)
			}
		}
		m.recount(p.s)
		p.masks[k] = m
	}
	return p.masks[k]
}

// start places q now, recounting masks it touched.
func (p *planner) start(q *Pending, pl Placement) {
	var end time.Time
	if q.TimeLimit > 0 {
		end = p.now.Add(q.TimeLimit)
	}
	if err := p.s.Place(q.ID, pl, end); err != nil {
		panic("placement: found placement is taken: " + err.Error()) // find only returns free units
	}
	for _, m := range p.masks {
		if m == nil {
			continue
		}
		for _, u := range pl.units {
			if m.g[u.node] != 0 {
				m.recount(p.s)
				break
			}
		}
	}
}

// estimate finds when and where q fits soonest; reserve makes it a reservation.
func (p *planner) estimate(q *Pending, d *Decision, reserve bool) {
	pl, at, ok := p.earliest(q)
	if !ok {
		d.Why = WaitNoEstimate
		return
	}
	d.Placement, d.ExpectedStart = pl, at
	d.Why = WaitNoRoom
	if reserve {
		p.reserve(q, d)
	}
}

// reserve makes d's estimated placement and start q's reservation.
func (p *planner) reserve(q *Pending, d *Decision) {
	r := &Reservation{Job: q.ID, Start: d.ExpectedStart, Placement: d.Placement, Promise: d.ExpectedStart, Hold: d.ExpectedStart}
	if q.Prior != nil && !q.Prior.Promise.IsZero() && q.Prior.Promise.Before(r.Promise) {
		r.Promise = q.Prior.Promise
	}
	if p.slack > 0 && !q.Queued.IsZero() && r.Promise.After(q.Queued) {
		h := r.Promise.Add(time.Duration(p.slack * float64(r.Promise.Sub(q.Queued))))
		if h.After(r.Hold) {
			r.Hold = h
		}
	}
	if q.TimeLimit > 0 {
		r.End = r.Start.Add(q.TimeLimit)
	}
	p.insert(r)
	p.made++
	d.Why, d.Reservation = WaitReserved, r
}

// insert adds r to the pass's reservations, kept by start.
func (p *planner) insert(r *Reservation) {
	i, _ := slices.BinarySearchFunc(p.res, r, func(a, b *Reservation) int { return a.hold().Compare(b.hold()) })
	p.res = slices.Insert(p.res, i, r)
	p.masks = nil
}

// FindAround is Find for a job of time limit limit started at now, kept off
// the GPUs of the reservations res that it would overlap (the victim search's
// test: stopping running jobs helps a job only where a reservation does not
// keep it off).
func (s *State) FindAround(now time.Time, r Request, limit time.Duration, res []*Reservation) (Placement, bool, error) {
	c, err := s.ix.compile(r)
	if err != nil {
		return Placement{}, false, err
	}
	p := planner{s: s, now: now}
	for _, rs := range res {
		if rs != nil && len(rs.Placement.units) > 0 {
			p.insert(rs)
		}
	}
	f := finder{ix: s.ix, v: &s.v, st: s, m: p.maskFor(limit)}
	pl, ok := f.find(&c)
	return pl, ok, nil
}

// earliest is the soonest time, and the placement then, at which q fits: from
// the running jobs' expected ends, around the reservations already made.
func (p *planner) earliest(q *Pending) (Placement, time.Time, bool) {
	s := p.s
	ends := p.s.endings(p.now)
	r := &q.Req.c
	// view after the first k ends.
	v := s.v.clone()
	released := 0
	viewAt := func(k int) *view {
		if k < released {
			v = s.v.clone()
			released = 0
		}
		for ; released < k; released++ {
			for _, u := range ends[released].units {
				v.g[u.node] |= u.g
				v.s[u.node] |= u.s
			}
		}
		return &v
	}
	try := func(k int, at time.Time) (Placement, bool) {
		f := finder{ix: s.ix, v: viewAt(k), idle: &s.v, buf: p.buf}
		if m := p.projMask(at, q.TimeLimit); m != nil {
			f.m = m
		}
		pl, ok := f.find(r)
		p.buf = f.buf
		return pl, ok
	}
	// k ends released: time is ends[k-1].at (now for k = 0); several ends at
	// one time are released together.
	timeOf := func(k int) time.Time {
		if k == 0 {
			return p.now
		}
		return ends[k-1].at
	}
	if !p.reservedFor(r) {
		// Fitting only gets easier as jobs end (reservations in domains r may
		// not use mask nothing it could take): binary search the first k.
		lo, hi := 0, len(ends)
		if _, ok := try(hi, timeOf(hi)); !ok {
			return Placement{}, time.Time{}, false
		}
		for lo < hi {
			mid := (lo + hi) / 2
			if _, ok := try(mid, timeOf(mid)); ok {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		// Release everything ending at the same time as the k-th.
		k := lo
		for k > 0 && k < len(ends) && ends[k].at.Equal(ends[k-1].at) {
			k++
		}
		pl, _ := try(k, timeOf(k))
		return pl, timeOf(k), true
	}
	// Around reservations fitting is not monotone: try each time a job ends or
	// a reservation does.
	times := []time.Time{p.now}
	for _, e := range ends {
		times = append(times, e.at)
	}
	for _, rs := range p.res {
		if !rs.End.IsZero() {
			times = append(times, rs.End)
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	times = slices.CompactFunc(times, func(a, b time.Time) bool { return a.Equal(b) })
	k := 0
	for _, t := range times {
		for k < len(ends) && !ends[k].at.After(t) {
			k++
		}
		if pl, ok := try(k, t); ok {
			return pl, t, true
		}
	}
	return Placement{}, time.Time{}, false
}

// ending is GPUs and instances that free at a job's expected end; id orders
// ends at one time (a shared GPU's is "", then by node and GPU).
type ending struct {
	at    time.Time
	id    string
	units []unit
}

// endings are what frees when, from the running jobs' expected ends (one
// past its end frees at now: it is about to be expired), by time. A shared
// GPU frees whole when its last share ends, and never while a share has no
// expected end: a fraction that ends before a reservation's hold may open a
// shared GPU on the reserved GPUs without moving the reservation later.
func (s *State) endings(now time.Time) []ending {
	var ends []ending
	var last map[shareKey]time.Time // each shared GPU's last end; zero: a share has none
	for _, a := range s.allocs {
		if u := a.p.units; len(u) == 1 && u[0].frac > 0 { // a fraction's placement is its one share
			k := shareKey{u[0].node, u[0].sgpu}
			if last == nil {
				last = map[shareKey]time.Time{}
			}
			if t, seen := last[k]; !seen || !t.IsZero() && (a.end.IsZero() || a.end.After(t)) {
				last[k] = a.end
			}
			continue
		}
		if !a.end.IsZero() {
			ends = append(ends, ending{notBefore(a.end, now), a.id, a.p.units})
		}
	}
	for k, t := range last {
		if !t.IsZero() {
			ends = append(ends, ending{notBefore(t, now), "", []unit{{node: k.node, g: 1 << k.gpu}}})
		}
	}
	slices.SortFunc(ends, func(x, y ending) int {
		return cmp.Or(x.at.Compare(y.at), cmp.Compare(x.id, y.id), cmp.Compare(x.units[0].node, y.units[0].node),
			cmp.Compare(x.units[0].g, y.units[0].g))
	})
	return ends
}

// notBefore is t, or now if t is past.
func notBefore(t, now time.Time) time.Time {
	if t.Before(now) {
		return now
	}
	return t
}

// reservedFor reports whether a reservation of the pass lies in a resource
// domain r may use.
func (p *planner) reservedFor(r *creq) bool {
	if len(p.res) == 0 {
		return false
	}
	if p.perDomain == nil {
		return true
	}
	found := false
	p.domainsOf(r, func(d int) bool {
		found = p.perDomain[d] != nil
		return !found
	})
	return found
}

// projMask masks the reservations a job starting at t with limit d overlaps.
func (p *planner) projMask(t time.Time, d time.Duration) *mask {
	var m *mask
	for _, r := range p.res {
		if !r.overlaps(t, d) {
			continue
		}
		if m == nil {
			m = newMask(p.s.ix)
		}
		for _, u := range r.Placement.units {
			m.add(u)
		}
	}
	return m
}

// maxReplan bounds PlanConfig.Replan.
const maxReplan = 1000

// replanFor tries to start queue[i], which fits now only on reserved GPUs, by
// placing again every reservation it would overlap, with it running, at the
// same or an earlier start (PlanConfig.Replan). It returns the job's placement
// and started when it started (the admit check said yes); otherwise nothing
// changed, and refusal is the admit check's reason if it was asked and said no.
// Reservations of this pass keep their pointers (out's decisions, EASY's
// perDomain and other decisions' reasons hold them) and their decisions are
// updated; a later job's prior, the caller's, is replaced in res (moved).
func (p *planner) replanFor(queue []Pending, i int, out []Decision, admit AdmitFunc) (Placement, bool, string) {
	q := &queue[i]
	k := 0 // the reservations q would overlap: a prefix of res
	for _, rs := range p.res {
		if !rs.overlaps(p.now, q.TimeLimit) {
			break
		}
		k++
	}
	// Candidates: for each reservation q would overlap, latest hold first (the
	// furthest start has the most ends before it to move to), a placement
	// overlapping it alone; then one overlapping any.
	for c := k - 1; c >= -1 && p.replan > 0 && p.replanFinds > 0; c-- {
		p.replanFinds--
		var m *mask
		if c >= 0 {
			if _, ok := p.owner[p.res[c]]; !ok {
				continue
			}
			m = newMask(p.s.ix)
			for x, rs := range p.res[:k] {
				if x != c {
					for _, u := range rs.Placement.units {
						m.add(u)
					}
				}
			}
			m.recount(p.s)
		}
		f := finder{ix: p.s.ix, v: &p.s.v, st: p.s, m: m, buf: p.buf}
		pl, ok := f.find(&q.Req.c)
		p.buf = f.buf
		if !ok {
			continue
		}
		var hit []*Reservation // by hold, as res
		movable := true
		for _, rs := range p.res[:k] {
			if sharesUnits(rs.Placement, pl) {
				_, ok := p.owner[rs]
				movable = movable && ok
				hit = append(hit, rs)
			}
		}
		if !movable || c < 0 && len(hit) == 1 && k > 0 {
			continue // not movable, or tried alone already
		}
		if len(hit) > 0 {
			p.replan--
		}
		if started, refusal := p.replanAround(queue, i, out, admit, pl, hit); started || refusal != "" {
			return pl, started, refusal
		}
	}
	return Placement{}, false, ""
}

// replanAround places queue[i] on pl and each reservation of hit (those pl
// overlaps) again, no later; see replanFor.
func (p *planner) replanAround(queue []Pending, i int, out []Decision, admit AdmitFunc, pl Placement, hit []*Reservation) (started bool, refusal string) {
	q := &queue[i]
	var end time.Time
	if q.TimeLimit > 0 {
		end = p.now.Add(q.TimeLimit)
	}
	if err := p.s.Place(q.ID, pl, end); err != nil {
		panic("placement: found placement is taken: " + err.Error()) // find only returns free units
	}
	saved := slices.Clone(p.res)
	before := make([]Reservation, len(hit))
	for k, rs := range hit {
		before[k] = *rs
	}
	undo := func() {
		if err := p.s.Release(q.ID); err != nil {
			panic("placement: " + err.Error())
		}
		p.res, p.masks = saved, nil
	}
	p.res = slices.DeleteFunc(p.res, func(r *Reservation) bool { return slices.Contains(hit, r) })
	p.masks = nil
	moved := make([]*Reservation, len(hit))
	for k, old := range hit {
		j := p.owner[old]
		npl, at, ok := p.earliest(&queue[j])
		if !ok || at.After(old.Start) || j < i && p.perDomain != nil && p.domainOf(npl) != p.domainOf(old.Placement) {
			undo()
			return false, ""
		}
		nr := *old
		nr.Start, nr.Placement = at, npl
		if !old.End.IsZero() {
			nr.End = at.Add(queue[j].TimeLimit)
		}
		if nr.Hold.IsZero() || old.hold().Equal(old.Start) {
			nr.Hold = at
		} // else slack's hold, past the old start, stays
		p.insert(&nr)
		moved[k] = &nr
	}
	if admit != nil {
		if yes, why := admit(q, pl); !yes {
			undo()
			return false, why
		}
	}
	for k, old := range hit {
		nr, j := moved[k], p.owner[old]
		if j < i {
			*old = *nr
			p.res[slices.Index(p.res, nr)] = old
			out[j].Placement, out[j].ExpectedStart = old.Placement, old.Start
			continue
		}
		delete(p.owner, old)
		p.owner[nr] = j
		if p.moved == nil {
			p.moved = map[*Reservation]*Reservation{}
		}
		p.moved[queue[j].Prior] = nr
	}
	p.masks = nil
	if replanHook != nil {
		after := make([]Reservation, len(moved))
		for k, rs := range moved {
			after[k] = *rs
		}
		replanHook(q.ID, pl, before, after)
	}
	return true, ""
}

// replanHook, set by tests, sees each start re-planning allowed: the job, its
// placement, and the reservations it overlapped before and after.
var replanHook func(job string, pl Placement, before, after []Reservation)

// sharesUnits reports whether a and b hold a GPU or instance in common.
func sharesUnits(a, b Placement) bool {
	for _, x := range a.units {
		for _, y := range b.units {
			if x.node == y.node && (x.g&y.g != 0 || x.s&y.s != 0) {
				return true
			}
		}
	}
	return false
}
