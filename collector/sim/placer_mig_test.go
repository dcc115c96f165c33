package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// migGate is a gate that hands out MIG instances itself, as a scheduler that
// places: it records arrivals, ends and the instances held outside it.
type migGate struct {
	recGate
	outside map[string]string // "node/gpu/index" → holder
	calls   int
}

func (g *migGate) Outside(string, int, string, bool) {}

func (g *migGate) OutsideMIG(node string, gpu, index int, holder string, held bool) {
	g.calls++
	k := migKey(node, MIGSlot{gpu, index})
	if held {
		g.outside[k] = holder
	} else {
		delete(g.outside, k)
	}
}

func migKey(node string, s MIGSlot) string {
	return fmt.Sprintf("%s/%d/%d", node, s.GPU, s.Index)
}

// TestPlacerRunsMIGJobOnItsInstance: with a placer, a gated job on MIG runs
// on exactly the instance placed (its start names that instance's UUID), of
// the profile it asked for; the fleet reports the instances held outside the
// gate (OutsideMIG) and keeps its own work off instances given to jobs that
// wait for them, so that no placed instance is ever found busy.
func TestPlacerRunsMIGJobOnItsInstance(t *testing.T) {
	cfg := testConfig(3)
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := &migGate{recGate: recGate{ends: map[string]string{}}, outside: map[string]string{}}
	f.SetGate(g)
	// uuid of each instance, and the instances of each cluster, from the
	// capacity's layouts and the nodes' UUIDs (a MIG node's units in layout
	// order).
	uuid := map[string]string{}
	type inst struct {
		node, card, profile string
		slot                MIGSlot
	}
	var insts = map[string][]inst{}
	for _, c := range f.Capacity() {
		for _, n := range c.Nodes {
			ids, k := nodeNamed(f, n.Name).GPUUUIDs(), 0
			for gpu, layout := range n.MIG {
				for i, p := range layout {
					s := MIGSlot{gpu, i}
					uuid[migKey(n.Name, s)] = ids[k]
					insts[c.Name] = append(insts[c.Name], inst{n.Name, n.Card, p, s})
					k++
				}
			}
		}
	}
	given := map[string]string{} // instance → job
	placed := map[string][]NodeGPUs{}
	f.SetPlacer(func(key string) []NodeGPUs { return placed[key] })
	admitted := map[string]bool{}
	want := map[string]string{} // job → uuid of its instance
	run := 0
	for at := cfg.Start.Add(cfg.Tick); at.Before(cfg.Start.Add(24 * time.Hour)); at = at.Add(cfg.Tick) {
		for _, e := range f.Advance(at) {
			switch {
			case e.Event == schemas.EventStart && want[e.Job] != "":
				if !slices.Equal(e.GPUUUIDs, []string{want[e.Job]}) {
					t.Errorf("%s started on %v, placed on %s", e.Job, e.GPUUUIDs, want[e.Job])
				}
				run++
			case e.Event == schemas.EventEnd:
				for k, j := range given {
					if j == e.Job {
						delete(given, k)
					}
				}
			}
		}
		for _, a := range g.arrivals {
			if admitted[a.Key] || !f.Holds(a.Key) {
				continue
			}
			if a.MIGProfile != "" {
				i := slices.IndexFunc(insts[a.Cluster], func(x inst) bool {
					k := migKey(x.node, x.slot)
					return x.profile == a.MIGProfile && (a.Card == "" || a.Card == x.card) && given[k] == "" && g.outside[k] == ""
				})
				if i < 0 {
					continue // waits for an instance
				}
				x := insts[a.Cluster][i]
				k := migKey(x.node, x.slot)
				given[k], want[a.Key] = a.Key, uuid[k]
				placed[a.Key] = []NodeGPUs{{Node: x.node, MIG: []MIGSlot{x.slot}}}
			}
			admitted[a.Key] = true
			if err := f.Admit(a.Key, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	missed, all := f.PlacementMisses()
	if run == 0 || f.MIGPlacementsRun() != run || all < run {
		t.Errorf("%d MIG jobs started where placed; the fleet counts %d of %d run where placed", run, f.MIGPlacementsRun(), all)
	}
	if missed != 0 {
		t.Errorf("%d placed jobs found an instance busy: %v", missed, f.PlacementMissReasons())
	}
	t.Logf("%d MIG jobs run where placed, %d outside reports", run, g.calls)
}
