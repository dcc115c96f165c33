package sim

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// recGate records what the fleet tells it.
type recGate struct {
	arrivals []Arrival
	ends     map[string]string
}

func (g *recGate) Submitted(a Arrival)      { g.arrivals = append(g.arrivals, a) }
func (g *recGate) Ended(key, status string) { g.ends[key] = status }

// TestGateHoldsUntilAdmitted puts a gate in front of the fleet: no job a
// scheduler knows starts (on whole GPUs or a MIG instance) until Admit lets
// it, processes started by hand are not held, a job on MIG asks for one
// instance of a profile its node's layouts have, an admitted job starts at
// the next Advance on the card it was admitted on, and its end is reported.
func TestGateHoldsUntilAdmitted(t *testing.T) {
	cfg := testConfig(2)
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := &recGate{ends: map[string]string{}}
	f.SetGate(g)
	at := cfg.Start.Add(2 * time.Hour)
	held := map[string]bool{}
	for _, e := range f.Advance(at) {
		if e.Event != schemas.EventStart {
			continue
		}
		if !strings.HasPrefix(e.Job, "proc/") {
			t.Errorf("%s started on %s without being admitted", e.Job, e.GPUUUIDs)
		}
	}
	if len(g.arrivals) == 0 {
		t.Fatal("the gate was told of no arrival")
	}
	for _, a := range g.arrivals {
		if a.Key == "" || a.GPUs < 1 || a.Pool == "" || a.Team == "" || a.Cluster == "" || a.PlanS <= 0 {
			t.Errorf("arrival %+v: missing what a scheduler needs", a)
		}
		if !f.Holds(a.Key) {
			t.Errorf("%s: told of it but not held", a.Key)
		}
		held[a.Key] = true
	}
	caps := f.Capacity()
	if len(caps) != cfg.Clusters {
		t.Fatalf("capacity of %d clusters, want %d", len(caps), cfg.Clusters)
	}
	checkMIGArrivals(t, g.arrivals, caps)
	// Admit one that named no card on a card, and every other as asked.
	var picked Arrival
	for _, a := range g.arrivals {
		if a.Card == "" && a.MIGProfile == "" {
			picked = a
			break
		}
	}
	if err := f.Admit("k8s/none/such", ""); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("admit an unknown job: %v, want ErrUnknownJob", err)
	}
	for _, a := range g.arrivals {
		card := a.Card
		if a.Key == picked.Key {
			for c, n := range caps[0].Cards {
				if n > 0 && (card == "" || c < card) {
					card = c
				}
			}
			if caps[0].Name != a.Cluster {
				card = ""
			}
		}
		if err := f.Admit(a.Key, card); err != nil {
			t.Fatalf("admit %s: %v", a.Key, err)
		}
		if a.Card != "" {
			if err := f.Admit(a.Key, a.Card+"-other"); err != nil {
				t.Errorf("admit %s again: %v, want nil (already admitted)", a.Key, err)
			}
		}
	}
	started := map[string]bool{}
	for at2 := at.Add(cfg.Tick); at2.Before(at.Add(48 * time.Hour)); at2 = at2.Add(cfg.Tick) {
		for _, e := range f.Advance(at2) {
			if e.Event == schemas.EventStart {
				started[e.Job] = true
			}
		}
		for _, a := range g.arrivals[len(held):] { // admit later arrivals as they come
			if !held[a.Key] {
				held[a.Key] = true
				if err := f.Admit(a.Key, ""); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	n := 0
	for key := range held {
		if started[key] {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no admitted job started")
	}
	ended := 0
	for key := range held {
		if _, ok := g.ends[key]; ok {
			ended++
		}
	}
	if ended == 0 {
		t.Errorf("no end of %d admitted jobs was reported to the gate", len(held))
	}
	t.Logf("%d arrivals, %d started, %d ends reported", len(held), n, ended)
}

// TestGateAdmitWrongCard refuses to place a job on a card it did not ask for.
func TestGateAdmitWrongCard(t *testing.T) {
	cfg := testConfig(2)
	f, _ := New(cfg)
	g := &recGate{ends: map[string]string{}}
	f.SetGate(g)
	f.Advance(cfg.Start.Add(time.Hour))
	for _, a := range g.arrivals {
		if a.Card != "" {
			err := f.Admit(a.Key, "B200-192GB")
			if err == nil || !strings.Contains(err.Error(), a.Card) {
				t.Errorf("admit %s (asked for %s) on B200: %v", a.Key, a.Card, err)
			}
			if !f.Holds(a.Key) {
				t.Errorf("%s: a refused admission let it go", a.Key)
			}
			return
		}
	}
	t.Fatal("no arrival named its card")
}

// TestStopBeforeStart: a job the scheduler admits and takes back before the
// fleet started it (a reclaim in the same pass, before its resume; or while
// its placed GPUs were not free yet) ends at once for its gate (told of the
// end, with the stop's status) and goes back under it, told of again with its
// submission kept, and starts when admitted again; without that it
// waited in the fleet for ever, known to no scheduler. Stop and RequeueFor
// alike; a key the fleet never had is still unknown.
func TestStopBeforeStart(t *testing.T) {
	cfg := testConfig(2)
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := &recGate{ends: map[string]string{}}
	f.SetGate(g)
	at := cfg.Start.Add(2 * time.Hour)
	f.Advance(at)
	if len(g.arrivals) < 2 {
		t.Fatalf("the gate was told of %d arrivals, want 2 or more", len(g.arrivals))
	}
	held, admitted := g.arrivals[0], g.arrivals[1]
	if err := f.Admit(admitted.Key, ""); err != nil { // admitted, not started before the next Advance
		t.Fatal(err)
	}
	told := len(g.arrivals)
	if err := f.Stop(held.Key, schemas.StatusCancelled); err != nil {
		t.Errorf("stop %s, held for its gate: %v", held.Key, err)
	}
	if err := f.RequeueFor(admitted.Key, 0, ""); err != nil {
		t.Errorf("requeue %s, admitted and not started: %v", admitted.Key, err)
	}
	if err := f.Stop("k8s/none/such", schemas.StatusCancelled); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("stop an unknown job: %v, want ErrUnknownJob", err)
	}
	again := map[string]Arrival{}
	for _, a := range g.arrivals[told:] {
		again[a.Key] = a
	}
	// The gate learns that the attempt it was told of ended, with the stop's
	// status, so that its scheduler ends it and frees its GPUs before the
	// arrival comes again (else the arrival finds the key still queued).
	for key, want := range map[string]string{held.Key: schemas.StatusCancelled, admitted.Key: schemas.StatusPreempted} {
		if got, ok := g.ends[key]; !ok || got != want {
			t.Errorf("%s: stopped before it started, the gate was told it ended %q (told: %v), want %q", key, got, ok, want)
		}
	}
	for _, a := range []Arrival{held, admitted} {
		if _, ok := again[a.Key]; !ok {
			t.Errorf("%s: stopped before it started, and the gate was not told of it again", a.Key)
		}
		if !f.Holds(a.Key) {
			t.Errorf("%s: stopped before it started, and not held for its gate", a.Key)
		}
	}
	started := map[string]bool{}
	for _, e := range f.Advance(at.Add(cfg.Tick)) {
		if e.Event == schemas.EventStart {
			started[e.Job] = true
		}
	}
	if started[admitted.Key] {
		t.Errorf("%s started after it was taken back, before its gate admitted it again", admitted.Key)
	}
	for _, a := range []Arrival{held, admitted} {
		if err := f.Admit(a.Key, ""); err != nil {
			t.Fatal(err)
		}
	}
	for at2 := at.Add(2 * cfg.Tick); at2.Before(at.Add(48*time.Hour)) && len(started) < 2; at2 = at2.Add(cfg.Tick) {
		for _, e := range f.Advance(at2) {
			if e.Event == schemas.EventStart && (e.Job == held.Key || e.Job == admitted.Key) {
				started[e.Job] = true
			}
		}
	}
	if len(started) != 2 {
		t.Errorf("admitted again, started %v, want both %s and %s", started, held.Key, admitted.Key)
	}
}

// checkMIGArrivals: some arrivals ask for one MIG instance, each of a profile
// its cluster's capacity has instances of (and of its card's, when it names
// one), and every MIG resource is its nodes' layouts' instances.
func checkMIGArrivals(t *testing.T, arrivals []Arrival, caps []ClusterCapacity) {
	t.Helper()
	have := map[string]map[string]bool{} // cluster → profile and card/profile
	for _, c := range caps {
		have[c.Name] = map[string]bool{}
		fromNodes := map[string]int{}
		for _, n := range c.Nodes {
			if len(n.MIG) > 0 && len(n.MIG) != n.GPUs {
				t.Errorf("node %s: %d GPUs, layouts of %d", n.Name, n.GPUs, len(n.MIG))
			}
			for _, layout := range n.MIG {
				for _, p := range layout {
					fromNodes[n.Card+"/"+p]++
					have[c.Name][p], have[c.Name][n.Card+"/"+p] = true, true
				}
			}
		}
		if len(c.MIG) == 0 || !maps.Equal(c.MIG, fromNodes) {
			t.Errorf("cluster %s: MIG capacity %v, its nodes' layouts %v", c.Name, c.MIG, fromNodes)
		}
	}
	mig := 0
	for _, a := range arrivals {
		if a.MIGProfile == "" {
			continue
		}
		mig++
		if a.GPUs != 1 || !have[a.Cluster][a.MIGProfile] || a.Card != "" && !have[a.Cluster][a.Card+"/"+a.MIGProfile] {
			t.Errorf("arrival %s: %d instances of %s on %q in %s, which has %v", a.Key, a.GPUs, a.MIGProfile, a.Card, a.Cluster, have[a.Cluster])
		}
	}
	if mig == 0 {
		t.Error("no arrival asked for a MIG instance")
	}
}
