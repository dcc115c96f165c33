package sim

import (
	"errors"
	"testing"
	"time"

	fleetsim "github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/scheduler/executor"
	"github.com/gpupool/gpupool/schemas"
)

// fleetAt returns a default fleet advanced to 12 hours, and its truth then.
func fleetAt(t *testing.T) (*fleetsim.Fleet, time.Time, []fleetsim.Truth) {
	t.Helper()
	cfg := fleetsim.DefaultConfig()
	cfg.Seed, cfg.Start = 3, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f, err := fleetsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := cfg.Start.Add(12 * time.Hour)
	f.Advance(at)
	return f, at, f.Truth()
}

func ongoing(truth []fleetsim.Truth, kind schemas.FindingKind, withJob bool) *fleetsim.Truth {
	for _, tr := range truth {
		if tr.Kind == kind && tr.End.IsZero() && (tr.Job != "") == withJob {
			return &tr
		}
	}
	return nil
}

func TestExecutor(t *testing.T) {
	f, at, truth := fleetAt(t)
	ex, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	idle, zombie := ongoing(truth, schemas.KindIdle, true), ongoing(truth, schemas.KindZombie, false)
	if idle == nil || zombie == nil {
		t.Fatal("the fleet has no ongoing idle job or stray process at 12 h")
	}
	tests := []struct {
		name     string
		kill     bool
		target   executor.Target
		wantDone bool
		wantErr  error
	}{
		{"requeue idle job", false, executor.Target{Job: idle.Job}, true, nil},
		{"requeue it again", false, executor.Target{Job: idle.Job}, false, nil},
		{"unknown job", false, executor.Target{Job: "k8s/x/none"}, false, executor.ErrNotFound},
		{"no job key", false, executor.Target{}, false, executor.ErrUnsupported},
		{"kill stray", true, executor.Target{Node: zombie.Node, PID: zombie.PID}, true, nil},
		{"kill it again", true, executor.Target{Node: zombie.Node, PID: zombie.PID}, false, nil},
		{"unknown pid", true, executor.Target{Node: zombie.Node, PID: 1}, false, executor.ErrNotFound},
		{"kill without pid", true, executor.Target{Node: zombie.Node}, false, executor.ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out executor.Outcome
			var err error
			if tt.kill {
				out, err = ex.Kill(t.Context(), tt.target, 0)
			} else {
				out, err = ex.Stop(t.Context(), tt.target, true, 0)
			}
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) || out.Done != tt.wantDone {
				t.Fatalf("outcome %+v err %v, want done %v err %v", out, err, tt.wantDone, tt.wantErr)
			}
		})
	}
	// An idle notebook is resubmitted when its owner comes back: the end of its
	// idle stretch, at most 6 hours on.
	var requeued bool
	for end := at.Add(7 * time.Hour); at.Before(end) && !requeued; {
		at = at.Add(time.Minute)
		for _, e := range f.Advance(at) {
			if e.Event == schemas.EventSubmit && e.RerunOf == idle.Job {
				requeued = true
			}
		}
	}
	if !requeued {
		t.Error("the fleet did not resubmit the requeued job")
	}
}

// TestStopForWrongCard: a job a policy requeues for wrong_card is started again
// on another card (the one the finding names); requeued for another finding, on
// its own.
func TestStopForWrongCard(t *testing.T) {
	for _, tt := range []struct {
		finding schemas.FindingKind
		moves   bool
	}{{schemas.KindWrongCard, true}, {schemas.KindLowUtil, false}} {
		t.Run(string(tt.finding), func(t *testing.T) {
			f, at, truth := fleetAt(t)
			ex, err := New(f)
			if err != nil {
				t.Fatal(err)
			}
			tr := ongoing(truth, schemas.KindWrongCard, true)
			for end := at.Add(48 * time.Hour); tr == nil && at.Before(end); {
				at = at.Add(10 * time.Minute)
				f.Advance(at)
				tr = ongoing(f.Truth(), schemas.KindWrongCard, true)
			}
			if tr == nil {
				t.Fatal("no job on the wrong card in 60 hours")
			}
			if _, err := ex.Stop(t.Context(), executor.Target{Job: tr.Job, Finding: tt.finding}, true, 0); err != nil {
				t.Fatal(err)
			}
			var was, next string
			for end := at.Add(12 * time.Hour); next == "" && at.Before(end); {
				at = at.Add(10 * time.Minute)
				for _, e := range f.Advance(at) {
					if e.Event == schemas.EventSubmit && e.RerunOf == tr.Job {
						next = e.Card
					}
				}
			}
			for _, n := range f.Nodes() {
				if n.Name() == tr.Node {
					was = n.CardType()
				}
			}
			if next == "" || was == "" {
				t.Fatalf("next attempt asks for %q, the job ran on %q", next, was)
			}
			if moved := next != was; moved != tt.moves {
				t.Errorf("requeued for %s: next attempt asks for %s, it ran on %s", tt.finding, next, was)
			}
		})
	}
}
