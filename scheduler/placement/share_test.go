package placement

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func frac(f int, mode Sharing, mem int) Request {
	return Request{GPUs: 1, Cards: []string{"H100-80GB"}, Fraction: f, Sharing: mode, MemoryMiB: mem}
}

func mustPlace(t *testing.T, s *State, id string, r Request) Placement {
	t.Helper()
	p, ok, err := s.Find(r)
	if err != nil || !ok {
		t.Fatalf("%s: find %+v: ok %v, %v", id, r, ok, err)
	}
	if err := s.Place(id, p, time.Time{}); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	if err := s.check(); err != nil {
		t.Fatalf("after %s: %v", id, err)
	}
	return p
}

// TestShareBestFit: fractions go to the fullest shared GPU of their mode with
// room (fractions and memory), else to a free GPU on the fullest node; modes
// never mix; the last share to leave frees the GPU whole.
func TestShareBestFit(t *testing.T) {
	s := mustState(t, testFleet(1, 2, 4, 2))
	mustPlace(t, s, "whole", gpus(2))
	steps := []struct {
		id   string
		r    Request
		want string
	}{
		{"a", frac(500, MPS, 0), "c0 H100-80GB mps c0-n00[2:500/1000,40960MiB]"},
		{"b", frac(300, MPS, 0), "c0 H100-80GB mps c0-n00[2:300/1000,24576MiB]"},
		{"c", frac(400, TimeSlice, 0), "c0 H100-80GB timeslice c0-n00[3:400/1000,32768MiB]"},
		{"d", frac(300, MPS, 0), "c0 H100-80GB mps c0-n01[0:300/1000,24576MiB]"},     // 800 + 300 > 1000
		{"e", frac(100, MPS, 20000), "c0 H100-80GB mps c0-n01[0:100/1000,20000MiB]"}, // 65536 + 20000 > 81920 on GPU 2
		{"f", frac(100, MPS, 0), "c0 H100-80GB mps c0-n00[2:100/1000,8192MiB]"},      // the fullest with room
		{"g", frac(500, TimeSlice, 40000), "c0 H100-80GB timeslice c0-n00[3:500/1000,40000MiB]"},
	}
	for _, st := range steps {
		if got := mustPlace(t, s, st.id, st.r).String(); got != st.want {
			t.Errorf("%s: placed %s, want %s", st.id, got, st.want)
		}
	}
	if got := s.Free("c0", "H100-80GB"); got != 3 {
		t.Errorf("free whole GPUs %d, want 3 (three shared, two held whole)", got)
	}
	if _, ok, _ := s.Find(gpus(4)); ok {
		t.Error("a 4-GPU job found room: shared GPUs were taken for free")
	}
	for _, id := range []string{"a", "b"} {
		if err := s.Release(id); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Free("c0", "H100-80GB"); got != 3 {
		t.Errorf("free %d after a and b left, want 3: f still shares GPU 2", got)
	}
	if err := s.Release("f"); err != nil {
		t.Fatal(err)
	}
	if got := s.Free("c0", "H100-80GB"); got != 4 {
		t.Errorf("free %d after the last share of GPU 2 left, want 4", got)
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	want := []SharedGPU{{Node: "c0-n00", GPU: 3, Mode: TimeSlice, Used: 900, MemMiB: 72768, Jobs: 2},
		{Node: "c0-n01", GPU: 0, Mode: MPS, Used: 400, MemMiB: 44576, Jobs: 2}}
	if got := s.Shared(); !slices.Equal(got, want) {
		t.Errorf("shared %+v, want %+v", got, want)
	}
}

// TestSharePlaceRefuses: Place refuses a whole GPU that is shared, a share of
// another mode, and a share past the GPU's fraction or memory.
func TestSharePlaceRefuses(t *testing.T) {
	s := mustState(t, testFleet(1, 1, 2, 1))
	mustPlace(t, s, "a", frac(600, MPS, 0))
	mk := func(a NodeAlloc) Placement {
		p, err := s.NewPlacement([]NodeAlloc{a})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, a := range map[string]NodeAlloc{
		"whole on shared": {Node: "c0-n00", GPUs: []int{0}},
		"other mode":      {Node: "c0-n00", Shares: []Share{{GPU: 0, Fraction: 100, Mode: TimeSlice}}},
		"past 1000":       {Node: "c0-n00", Shares: []Share{{GPU: 0, Fraction: 401, Mode: MPS}}},
		"past memory":     {Node: "c0-n00", Shares: []Share{{GPU: 0, Fraction: 100, Mode: MPS, MemMiB: 40000}}},
	} {
		if err := s.Place("x", mk(a), time.Time{}); !errors.Is(err, ErrTaken) {
			t.Errorf("%s: %v, want ErrTaken", name, err)
		}
	}
	mustPlace(t, s, "w", gpus(1))
	if err := s.Place("y", mk(NodeAlloc{Node: "c0-n00", Shares: []Share{{GPU: 1, Fraction: 100, Mode: MPS}}}), time.Time{}); !errors.Is(err, ErrTaken) {
		t.Errorf("share of a GPU held whole: %v, want ErrTaken", err)
	}
	if err := s.Place("z", mk(NodeAlloc{Node: "c0-n00", Shares: []Share{{GPU: 0, Fraction: 400, Mode: MPS, MemMiB: 100}}}), time.Time{}); err != nil {
		t.Errorf("a share that fits: %v", err)
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
}

// TestShareRoundTrip: a fraction's placement through JSON and NewPlacement
// places the same share in a fresh state (a restart).
func TestShareRoundTrip(t *testing.T) {
	s := mustState(t, testFleet(1, 2, 4, 2))
	p := mustPlace(t, s, "a", frac(250, TimeSlice, 1024))
	b, err := json.Marshal(p.Nodes())
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"node":"c0-n00","shares":[{"gpu":0,"fraction":250,"mode":"timeslice","mem_mib":1024}]}]`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	var nodes []NodeAlloc
	if err := json.Unmarshal(b, &nodes); err != nil {
		t.Fatal(err)
	}
	s2 := mustState(t, testFleet(1, 2, 4, 2))
	q, err := s2.NewPlacement(nodes)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Place("a", q, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if q.String() != p.String() || !slices.Equal(s2.Shared(), s.Shared()) || q.Count() != 1 {
		t.Errorf("re-placed %s %+v, want %s %+v", q, s2.Shared(), p, s.Shared())
	}
	for name, a := range map[string]NodeAlloc{
		"two shares":    {Node: "c0-n00", Shares: []Share{{GPU: 0, Fraction: 1, Mode: MPS}, {GPU: 1, Fraction: 1, Mode: MPS}}},
		"with GPUs":     {Node: "c0-n00", GPUs: []int{1}, Shares: []Share{{GPU: 0, Fraction: 1, Mode: MPS}}},
		"no GPU":        {Node: "c0-n00", Shares: []Share{{GPU: 4, Fraction: 1, Mode: MPS}}},
		"fraction 1000": {Node: "c0-n00", Shares: []Share{{GPU: 0, Fraction: 1000, Mode: MPS}}},
		"mode":          {Node: "c0-n00", Shares: []Share{{GPU: 0, Fraction: 1, Mode: "hami"}}},
		"memory":        {Node: "c0-n00", Shares: []Share{{GPU: 0, Fraction: 1, Mode: MPS, MemMiB: 81921}}},
	} {
		if _, err := s2.NewPlacement([]NodeAlloc{a}); !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "shares") {
			t.Errorf("%s: %v, want ErrInvalidRequest naming shares", name, err)
		}
	}
}

// TestShareRequestErrors: bad fraction requests name the field and what it
// takes; a fraction never goes on a partitioned GPU.
func TestShareRequestErrors(t *testing.T) {
	s := mustState(t, testFleet(1, 1, 2, 1))
	for _, c := range []struct {
		r    Request
		want string
	}{
		{frac(1000, MPS, 0), "fraction: 1000 is outside 1–999"},
		{frac(-1, MPS, 0), "fraction: -1 is outside"},
		{Request{GPUs: 2, Cards: []string{"H100-80GB"}, Fraction: 500, Sharing: MPS}, "gpus: 2 with fraction 500"},
		{Request{GPUs: 1, Cards: []string{"H100-80GB"}, Fraction: 500, Sharing: MPS, MIGProfile: "1g.10gb"}, "set with mig_profile"},
		{frac(500, "", 0), `sharing: "" is neither "timeslice" nor "mps"`},
		{frac(500, "hami", 0), `sharing: "hami"`},
		{frac(500, MPS, -5), "memory_mib: -5 is negative"},
		{Request{GPUs: 1, Cards: []string{"H100-80GB"}, Sharing: MPS}, "sharing: \"mps\" without fraction"},
		{Request{GPUs: 1, Cards: []string{"H100-80GB"}, MemoryMiB: 5}, "memory_mib: 5 without fraction"},
	} {
		if _, err := s.Compile(c.r); !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
	if _, err := s.Compile(frac(500, MPS, 90000)); !errors.Is(err, ErrNeverFits) {
		t.Errorf("memory past the card: %v, want ErrNeverFits", err)
	}
	f := testFleet(1, 1, 2, 1)
	f.Clusters[0].Nodes[0].MIG = [][]string{{"7g.80gb"}, {"7g.80gb"}}
	if _, err := mustState(t, f).Compile(frac(100, MPS, 0)); !errors.Is(err, ErrNeverFits) {
		t.Errorf("fraction on an all-MIG fleet: %v, want ErrNeverFits", err)
	}
}

// TestSharePlanNoReservation: a fraction that does not fit waits for room
// without a reservation; a whole job behind it is still reserved; a shared
// GPU is not free in Fragmentation.
func TestSharePlanNoReservation(t *testing.T) {
	s := mustState(t, testFleet(1, 1, 2, 1))
	if err := s.Place("w", mustPlaceFind(t, s, gpus(1)), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	mustPlace(t, s, "a", frac(900, MPS, 0))
	q := []Pending{{ID: "f", Req: mustCompile(t, s, frac(200, MPS, 0)), TimeLimit: time.Hour},
		{ID: "g", Req: mustCompile(t, s, gpus(1)), TimeLimit: time.Hour}}
	ds := s.Plan(t0, q, PlanConfig{Policy: ConservativeBackfill}, nil)
	if ds[0].Start || ds[0].Reservation != nil || ds[0].Why != WaitNoRoom || !strings.Contains(ds[0].Reason(), "no room now for a 200/1000 mps share of one GPU of H100-80GB") {
		t.Errorf("fraction: %+v (%s), want no room and no reservation", ds[0], ds[0].Reason())
	}
	if ds[1].Reservation == nil {
		t.Errorf("whole job behind it: %+v, want a reservation on w's GPU", ds[1])
	}
	fr := s.Fragmentation(nil)
	if len(fr) != 1 || fr[0].Free != 0 || fr[0].GPUs != 2 {
		t.Errorf("fragmentation %+v: a shared GPU counted free", fr)
	}
}

func mustPlaceFind(t *testing.T, s *State, r Request) Placement {
	t.Helper()
	p, ok, err := s.Find(r)
	if err != nil || !ok {
		t.Fatalf("find %+v: %v %v", r, ok, err)
	}
	return p
}

// randomShareRequest is a whole, MIG or (half the time) fraction request.
func randomShareRequest(r *rand.Rand) Request {
	if r.IntN(2) == 0 {
		req := randomRequest(r)
		req.Spread = false
		return req
	}
	return randomFraction(r)
}

// TestShareProperties runs random queues of whole, MIG and fraction jobs over
// random fleets under every policy: check (no GPU given twice, no shared GPU
// past 1000 thousandths or its memory, one mode per shared GPU, no whole or
// MIG job on a shared GPU) holds after every pass; a fraction is on an
// unpartitioned GPU of its card, mode and cluster, holds its memory limit,
// takes a new GPU only when no shared one of its mode has room on that card,
// and never starts on a reserved GPU it would overlap.
func TestShareProperties(t *testing.T) {
	seeds := 120
	if testing.Short() {
		seeds = 30
	}
	policies := []PlanConfig{{Policy: StrictFIFO}, {Policy: BestEffortFIFO}, {Policy: Backfill}, {Policy: ConservativeBackfill, Depth: 4}}
	shares := 0
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 44))
		f := randomFleet(r)
		cfg := policies[seed%uint64(len(policies))]
		s := mustState(t, f)
		var queue []Pending
		now := t0
		for step := range 25 {
			for range r.IntN(8) {
				c, err := s.Compile(randomShareRequest(r))
				if err != nil {
					continue
				}
				queue = append(queue, Pending{ID: fmt.Sprintf("j%d-%d", step, len(queue)), Req: c, TimeLimit: time.Duration(r.IntN(4)) * time.Hour, Queued: now})
			}
			before := s.Shared()
			ds := s.Plan(now, queue, cfg, nil)
			var res []*Reservation
			for i, d := range ds {
				req := queue[i].Req.r
				if d.Reservation != nil {
					if req.Fraction > 0 {
						t.Fatalf("seed %d: fraction %s reserved", seed, d.ID)
					}
					res = append(res, d.Reservation)
				}
				if !d.Start {
					continue
				}
				if req.Fraction == 0 {
					if err := checkPlacement(s, req, d.Placement); err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					continue
				}
				shares++
				// A shared GPU that a reservation it would overlap holds (it
				// frees before the reservation starts) is no room for it.
				room := slices.DeleteFunc(slices.Clone(before), func(b SharedGPU) bool {
					for _, rs := range res {
						if rs.overlaps(now, queue[i].TimeLimit) && slices.ContainsFunc(rs.Placement.Nodes(), func(a NodeAlloc) bool {
							return a.Node == b.Node && slices.Contains(a.GPUs, b.GPU)
						}) {
							return true
						}
					}
					return false
				})
				if err := checkShare(s, req, d.Placement, room); err != nil {
					t.Fatalf("seed %d step %d %s: %v", seed, step, d.ID, err)
				}
				before = s.Shared()
				for _, rs := range res {
					if lim := queue[i].TimeLimit; shareOnUnits(rs.Placement, d.Placement) && (lim == 0 || now.Add(lim).After(rs.hold())) {
						t.Fatalf("seed %d: fraction %s started on %s's reservation", seed, d.ID, rs.Job)
					}
				}
			}
			if err := s.check(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			queue = slices.DeleteFunc(queue, func(p Pending) bool { _, ok := s.Placed(p.ID); return ok })
			now = now.Add(time.Duration(1+r.IntN(60)) * time.Minute)
			for _, id := range s.Jobs() {
				if r.IntN(3) == 0 {
					if err := s.Release(id); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	t.Logf("%d fractions started", shares)
	if shares == 0 {
		t.Fatal("no fraction started: the test tests nothing")
	}
}

// checkShare checks a started fraction against its request and the shared
// GPUs before it started.
func checkShare(s *State, r Request, p Placement, before []SharedGPU) error {
	ns := p.Nodes()
	if len(ns) != 1 || len(ns[0].Shares) != 1 || len(ns[0].GPUs)+len(ns[0].Slices) > 0 {
		return fmt.Errorf("%s is not one share", p)
	}
	sh := ns[0].Shares[0]
	n := &s.ix.nodes[s.ix.nodeIdx[ns[0].Node]]
	card := s.ix.cards[n.card]
	switch {
	case !slices.Contains(r.Cards, p.Card) || r.Cluster != "" && p.Cluster != r.Cluster:
		return fmt.Errorf("%s: card or cluster not asked for", p)
	case sh.Mode != r.Sharing || sh.Fraction != r.Fraction || r.MemoryMiB > 0 && sh.MemMiB != r.MemoryMiB || sh.MemMiB > card.MemoryGiB*1024:
		return fmt.Errorf("%s: share %+v for %+v", p, sh, r)
	case n.whole&(1<<sh.GPU) == 0:
		return fmt.Errorf("%s: on a partitioned GPU", p)
	}
	for _, b := range before {
		if b.Node == ns[0].Node && b.GPU == sh.GPU {
			return nil // on a shared GPU
		}
	}
	for _, b := range before {
		bn := &s.ix.nodes[s.ix.nodeIdx[b.Node]]
		if bn.card == n.card && (r.Cluster == "" || s.ix.clusters[bn.cluster].name == r.Cluster) && b.Mode == sh.Mode &&
			b.Used+sh.Fraction <= FractionUnit && b.MemMiB+sh.MemMiB <= card.MemoryGiB*1024 {
			return fmt.Errorf("%s took a new GPU while %s GPU %d had room (%+v)", p, b.Node, b.GPU, b)
		}
	}
	return nil
}

// shareOnUnits reports whether fraction placement b's GPU is in a's units.
func shareOnUnits(a, b Placement) bool {
	for _, x := range a.units {
		for _, y := range b.units {
			if x.node == y.node && x.g&(1<<y.sgpu) != 0 {
				return true
			}
		}
	}
	return false
}

// TestShareFragmentation: a waiting fraction may open any free GPU, so a lone
// free GPU on a busy node is not stranded while one waits; with only a gang
// of two per node waiting, it is.
func TestShareFragmentation(t *testing.T) {
	s := mustState(t, testFleet(1, 2, 2, 1))
	mustPlace(t, s, "a", gpus(3))
	gang := Request{GPUs: 2, GPUsPerNode: 2, Cards: []string{"H100-80GB"}}
	for _, c := range []struct {
		waiting  []Request
		stranded int
	}{
		{[]Request{gang}, 1},
		{[]Request{gang, frac(300, TimeSlice, 0)}, 0},
	} {
		var ws []Compiled
		for _, r := range c.waiting {
			ws = append(ws, mustCompile(t, s, r))
		}
		fr := s.Fragmentation(ws)
		if len(fr) != 1 || fr[0].Free != 1 || fr[0].Stranded != c.stranded || fr[0].Waiting != len(c.waiting) {
			t.Errorf("waiting %d: %+v, want 1 free, %d stranded", len(c.waiting), fr, c.stranded)
		}
	}
}
