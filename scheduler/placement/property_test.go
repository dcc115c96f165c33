package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// randomFleet is 1–3 clusters of 1–12 nodes of 1–8 GPUs, racks of 1–4 nodes,
// some nodes partitioned into MIG instances.
func randomFleet(r *rand.Rand) Fleet {
	f := Fleet{Cards: []Card{{Name: "H100-80GB", MemoryGiB: 80}, {Name: "A100-40GB", MemoryGiB: 40}}, Levels: []string{"rack", "block"}}
	layouts := map[string][][]string{
		"H100-80GB": {{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}, {"7g.80gb"}, {"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}},
		"A100-40GB": {{"3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"}, {"1g.5gb", "1g.5gb", "1g.5gb"}},
	}
	for c := range 1 + r.IntN(3) {
		cl := Cluster{Name: fmt.Sprintf("c%d", c)}
		rack := 1 + r.IntN(4)
		for n := range 1 + r.IntN(12) {
			card := f.Cards[r.IntN(2)].Name
			nd := Node{Name: fmt.Sprintf("c%d-n%d", c, n), Card: card, GPUs: 1 + r.IntN(8),
				Topology: map[string]string{"rack": fmt.Sprintf("r%d", n/rack), "block": fmt.Sprintf("b%d", n/(2*rack))}}
			if r.IntN(4) == 0 {
				for range nd.GPUs {
					if r.IntN(2) == 0 {
						nd.MIG = append(nd.MIG, layouts[card][r.IntN(len(layouts[card]))])
					} else {
						nd.MIG = append(nd.MIG, nil)
					}
				}
			}
			cl.Nodes = append(cl.Nodes, nd)
		}
		f.Clusters = append(f.Clusters, cl)
	}
	return f
}

func randomRequest(r *rand.Rand) Request {
	req := Request{GPUs: []int{1, 1, 1, 2, 2, 3, 4, 8, 12, 16}[r.IntN(10)], Cards: []string{"H100-80GB"}}
	switch r.IntN(4) {
	case 0:
		req.Cards = []string{"A100-40GB"}
	case 1:
		req.Cards = []string{"A100-40GB", "H100-80GB"}
	}
	if r.IntN(5) == 0 {
		req.MIGProfile = []string{"1g.10gb", "3g.40gb", "1g.5gb", "2g.10gb"}[r.IntN(4)]
	}
	if req.GPUs > 1 && r.IntN(3) == 0 {
		for _, d := range []int{4, 2, 1} {
			if req.GPUs%d == 0 && d < req.GPUs {
				req.GPUsPerNode = d
				break
			}
		}
	}
	if r.IntN(3) == 0 {
		req.Level = []string{"rack", "block"}[r.IntN(2)]
		req.LevelMode = []LevelMode{Required, Preferred}[r.IntN(2)]
	}
	req.Spread = r.IntN(6) == 0
	if r.IntN(2) == 0 {
		req.Cluster = fmt.Sprintf("c%d", r.IntN(2))
	}
	return req
}

// randomFraction is a fraction of one GPU of either card, in either mode,
// half the time with a memory limit.
func randomFraction(r *rand.Rand) Request {
	req := Request{GPUs: 1, Cards: [][]string{{"H100-80GB"}, {"A100-40GB"}, {"A100-40GB", "H100-80GB"}}[r.IntN(3)],
		Fraction: []int{100, 250, 333, 500, 750, 1 + r.IntN(999)}[r.IntN(6)], Sharing: Sharings[r.IntN(2)]}
	if r.IntN(2) == 0 {
		req.MemoryMiB = 1 + r.IntN(40*1024)
	}
	if r.IntN(3) == 0 {
		req.Cluster = fmt.Sprintf("c%d", r.IntN(2))
	}
	return req
}

// checkPlacement checks that p is r placed whole, in one cluster, on an
// accepted card, with gpus_per_node and a required level met.
func checkPlacement(s *State, r Request, p Placement) error {
	if p.Count() != r.GPUs {
		return fmt.Errorf("%s holds %d of %d", p, p.Count(), r.GPUs)
	}
	if !slices.Contains(r.Cards, p.Card) || r.Cluster != "" && p.Cluster != r.Cluster {
		return fmt.Errorf("%s: card or cluster not asked for", p)
	}
	domains := map[string]bool{}
	for _, u := range p.units {
		n := s.ix.nodes[u.node]
		if s.ix.clusters[n.cluster].name != p.Cluster || s.ix.cards[n.card].Name != p.Card {
			return fmt.Errorf("%s: node %s of another cluster or card", p, n.name)
		}
		if r.GPUsPerNode > 0 && popcount(u.g)+popcount(u.s) != r.GPUsPerNode {
			return fmt.Errorf("%s: node %s holds %d, not gpus_per_node %d", p, n.name, popcount(u.g)+popcount(u.s), r.GPUsPerNode)
		}
		if (r.MIGProfile == "") != (u.s == 0) {
			return fmt.Errorf("%s: whole GPUs and instances mixed up", p)
		}
		for b := u.s; b != 0; b &= b - 1 {
			if prof := s.ix.profiles[n.sliceProf[popcount((b&-b)-1)]]; prof != r.MIGProfile {
				return fmt.Errorf("%s: instance of %s, want %s", p, prof, r.MIGProfile)
			}
		}
		if r.Level != "" && r.LevelMode != Preferred {
			domains[s.ix.domains[n.domain[s.ix.levelIdx[r.Level]]].name] = true
		}
	}
	if len(domains) > 1 {
		return fmt.Errorf("%s: spans %d %s domains, required one", p, len(domains), r.Level)
	}
	return nil
}

// TestPlanProperties runs random queues over random fleets, with jobs ending at
// random, under every policy: nothing given twice, gangs whole, required levels
// met, no job started now on a reservation's GPUs unless its time limit
// ends by the reservation's start, and with MinAgeReserve no reservation for a
// job younger than it, while the first old enough that does not fit gets one.
// After every pass no running job holds a GPU of a reservation past its hold.
// With Replan, every reservation a start re-planned starts no later than it
// did, keeps its promise and holds none of the started job's GPUs before it
// ends.
func TestPlanProperties(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	starts, reserved := 0, 0
	defer func() { t.Logf("%d starts, %d reservations", starts, reserved) }()
	policies := []PlanConfig{{Policy: StrictFIFO}, {Policy: BestEffortFIFO}, {Policy: Backfill}, {Policy: ConservativeBackfill, Depth: 4},
		{Policy: Backfill, MinAgeReserve: 30 * time.Minute}, {Policy: Backfill, Slack: 1},
		{Policy: ConservativeBackfill, Replan: 4}, {Policy: Backfill, Replan: 4}, {Policy: ConservativeBackfill, Depth: 3, Replan: 2, Slack: 1}}
	replans := 0
	defer func() {
		replanHook = nil
		t.Logf("%d re-planned starts", replans)
		if replans == 0 {
			t.Error("no start was re-planned: the Replan configurations are not exercised")
		}
	}()
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 7))
		f := randomFleet(r)
		cfg := policies[seed%uint64(len(policies))]
		s := mustState(t, f)
		var now time.Time
		reqs := map[string]Request{}
		limitOf := map[string]time.Duration{}
		replanHook = func(job string, pl Placement, before, after []Reservation) {
			replans++
			if cfg.Replan == 0 {
				t.Fatalf("seed %d: %s re-planned with Replan off", seed, job)
			}
			for k := range before {
				b, a := before[k], after[k]
				if a.Job != b.Job || a.Start.After(b.Start) || !a.Promise.Equal(b.Promise) || a.Hold.Before(a.Start) || a.Hold.After(b.hold()) {
					t.Fatalf("seed %d: starting %s moved %s's reservation from %s (hold %s, promise %s) to %s (hold %s, promise %s)",
						seed, job, b.Job, b.Start, b.hold(), b.Promise, a.Start, a.Hold, a.Promise)
				}
				if err := checkPlacement(s, reqs[a.Job], a.Placement); err != nil {
					t.Fatalf("seed %d: re-planned reservation of %s: %v", seed, a.Job, err)
				}
				if lim := limitOf[job]; overlapsUnits(pl, a.Placement) && (lim == 0 || now.Add(lim).After(a.Start)) {
					t.Fatalf("seed %d: %s (limit %s) started on GPUs %s's re-planned reservation takes at %s", seed, job, lim, a.Job, a.Start)
				}
			}
		}
		var queue []Pending
		limits := map[string]time.Duration{}
		prior := map[string]*Reservation{} // each job's last reservation: it holds until its turn
		now = t0
		for step := range 30 {
			for range r.IntN(6) {
				req := randomRequest(r)
				if r.IntN(4) == 0 {
					req = randomFraction(r)
				}
				c, err := s.Compile(req)
				if err != nil {
					continue // never fits this fleet, or names a cluster it lacks
				}
				id := fmt.Sprintf("s%d-%d-%d", seed, step, len(queue))
				lim := time.Duration(r.IntN(8)) * time.Hour
				if req.Fraction > 0 {
					lim /= 4 // short enough to run before a reservation
				}
				queue = append(queue, Pending{ID: id, Req: c, TimeLimit: lim, Queued: now})
				reqs[id], limitOf[id] = req, lim
			}
			for i := range queue {
				queue[i].Prior = prior[queue[i].ID]
			}
			ds := s.Plan(now, queue, cfg, nil)
			var res []*Reservation
			firstOld := -1 // the first job old enough to reserve that did not start
			// Backfill: each resource domain (cluster, card) holds one reservation
			// at most, and the first old-enough job that does not fit and may use
			// only one domain, where no job before it could go, gets one (while
			// the pass's searches last: blocked counts the jobs that may have
			// spent one).
			domainRes := map[string]string{}
			touched := map[string]bool{}
			blocked := 0
			for i, d := range ds {
				old := now.Sub(queue[i].Queued) >= cfg.MinAgeReserve
				if !d.Start && old && firstOld < 0 && d.Why != WaitRefused && queue[i].Req.r.Fraction == 0 {
					firstOld = i
				}
				if cfg.Policy == Backfill && !d.Start && queue[i].Req.r.Fraction == 0 { // a fraction never reserves
					req := queue[i].Req.r
					if d.Reservation != nil {
						key := d.Reservation.Placement.Cluster + "/" + d.Reservation.Placement.Card
						if other, ok := domainRes[key]; ok {
							t.Fatalf("seed %d: %s and %s both hold a reservation in %s", seed, other, d.ID, key)
						}
						domainRes[key] = d.ID
					}
					single := req.Cluster != "" && len(req.Cards) == 1
					if key := req.Cluster + "/" + strings.Join(req.Cards, ""); single && old && !touched[key] &&
						blocked < estimateTries*len(f.Clusters)*len(f.Cards) && d.Reservation == nil && d.Why != WaitNoEstimate {
						t.Fatalf("seed %d: %s, the first job of %s that does not fit, got no reservation: %s", seed, d.ID, key, d.Why)
					}
					for _, cl := range f.Clusters {
						if c := cl.Name; req.Cluster == "" || req.Cluster == c {
							for _, k := range req.Cards {
								touched[c+"/"+k] = true
							}
						}
					}
					if old {
						blocked++
					}
				}
				if d.Reservation != nil && !old {
					t.Fatalf("seed %d: %s reserved %s after queueing, under min_age_reserve %s", seed, d.ID, now.Sub(queue[i].Queued), cfg.MinAgeReserve)
				}
				if cfg.Policy == Backfill && i == firstOld && d.Reservation == nil && d.Why != WaitNoEstimate {
					t.Fatalf("seed %d: %s, the first job old enough that does not fit, got no reservation: %s", seed, d.ID, d.Why)
				}
				if d.Reservation != nil {
					reserved++
					res = append(res, d.Reservation)
					if err := checkPlacement(s, queue[i].Req.r, d.Reservation.Placement); err != nil {
						t.Fatalf("seed %d: reservation: %v", seed, err)
					}
				}
				if !d.Start {
					continue
				}
				starts++
				if err := checkPlacement(s, queue[i].Req.r, d.Placement); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				limits[d.ID] = queue[i].TimeLimit
				// The pass's reservations so far, and the prior ones of the jobs
				// after this one (they hold until their turn, unless re-planning
				// moved them: their jobs' reservations are checked below).
				holding := slices.Clone(res)
				for _, q := range queue[i+1:] {
					if q.Prior != nil && cfg.Replan == 0 {
						holding = append(holding, q.Prior)
					}
				}
				for _, rs := range holding {
					if lim := queue[i].TimeLimit; overlapsUnits(rs.Placement, d.Placement) && (lim == 0 || now.Add(lim).After(rs.hold())) {
						t.Fatalf("seed %d: %s (limit %s) started on %s's reservation held to %s", seed, d.ID, lim, rs.Job, rs.hold())
					}
				}
			}
			// No running job holds a reservation's GPUs past its hold.
			for _, d := range ds {
				rs := d.Reservation
				if rs == nil {
					continue
				}
				for _, id := range s.Jobs() {
					a := s.allocs[id]
					if overlapsUnits(a.p, rs.Placement) && (a.end.IsZero() || a.end.After(rs.hold())) {
						t.Fatalf("seed %d: %s (to %s) holds GPUs of %s's reservation from %s, held to %s", seed, id, a.end, rs.Job, rs.Start, rs.hold())
					}
				}
			}
			for i, d := range ds {
				prior[queue[i].ID] = d.Reservation
				// Jobs end by their time limits, and the jobs started around a
				// reservation (fractions too) end by its hold: a job reserved
				// again before its last reservation started starts by that
				// one's hold at the latest. (A pass after it, the steps being
				// coarse, may find the job late for the next jobs' priors.)
				if p, rs := queue[i].Prior, d.Reservation; p != nil && rs != nil && !now.After(p.Start) && rs.Start.After(p.hold()) {
					t.Fatalf("seed %d step %d: %s's reservation moved from %s (hold %s) to %s", seed, step, d.ID, p.Start, p.hold(), rs.Start)
				}
				if rs := d.Reservation; rs != nil {
					// The promise only moves earlier, and the hold lies at or
					// after the start, within the slack of the promise.
					if p := queue[i].Prior; p != nil && !p.Promise.IsZero() && rs.Promise.After(p.Promise) {
						t.Fatalf("seed %d: %s's promise moved out from %s to %s", seed, d.ID, p.Promise, rs.Promise)
					}
					limit := rs.Promise.Add(time.Duration(cfg.Slack * float64(rs.Promise.Sub(queue[i].Queued))))
					if rs.Hold.Before(rs.Start) || rs.Hold.After(limit) && rs.Hold.After(rs.Start) {
						t.Fatalf("seed %d: %s held to %s, start %s, promise %s (slack %v)", seed, d.ID, rs.Hold, rs.Start, rs.Promise, cfg.Slack)
					}
				}
			}
			if err := s.check(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			queue = slices.DeleteFunc(queue, func(p Pending) bool { _, ok := s.Placed(p.ID); return ok })
			// Some jobs end, never past their limit.
			now = now.Add(time.Duration(1+r.IntN(60)) * time.Minute)
			for _, id := range s.Jobs() {
				if lim := limits[id]; r.IntN(3) == 0 || lim > 0 && !s.allocs[id].end.After(now) {
					if err := s.Release(id); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}

// overlapsUnits reports whether a and b hold a GPU or instance in common, a
// fraction's shared GPU counted as held.
func overlapsUnits(a, b Placement) bool {
	held := func(u unit) uint64 {
		if u.frac > 0 {
			return u.g | 1<<u.sgpu
		}
		return u.g
	}
	for _, x := range a.units {
		for _, y := range b.units {
			if x.node == y.node && (held(x)&held(y) != 0 || x.s&y.s != 0) {
				return true
			}
		}
	}
	return false
}

// TestPlaceNeverTwice places random placements found on one state into
// another that already holds some: Place must refuse every overlap.
func TestPlaceNeverTwice(t *testing.T) {
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 9))
		f := randomFleet(r)
		a, b := mustState(t, f), mustState(t, f)
		for i := range 40 {
			req := randomRequest(r)
			p, ok, err := a.Find(req)
			if err != nil || !ok {
				continue
			}
			id := fmt.Sprint(i)
			_ = a.Place(id, p, time.Time{})
			// b's own placements differ; placing a's into b is refused exactly when
			// they overlap what b holds.
			q, ok, _ := b.Find(req)
			if ok {
				_ = b.Place("b"+id, q, time.Time{})
			}
			pb := Placement{Cluster: p.Cluster, Card: p.Card, units: p.units, ix: b.ix}
			overlap := false
			for _, bid := range b.Jobs() {
				bp, _ := b.Placed(bid)
				overlap = overlap || overlapsUnits(bp, pb)
			}
			err = b.Place("x"+id, pb, time.Time{})
			if overlap != (err != nil) {
				t.Fatalf("seed %d: overlap %v, place error %v", seed, overlap, err)
			}
			if err == nil {
				_ = b.Release("x" + id)
			}
			if err := b.check(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
