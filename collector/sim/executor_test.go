package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// processOf reports whether node n shows process pid (or any process of job, when
// job is set) at at.
func processOf(t *testing.T, n *Node, at time.Time, pid uint32, job string) bool {
	t.Helper()
	var b schemas.SampleBatch
	if err := n.Sample(t.Context(), at, &b); err != nil {
		t.Fatal(err)
	}
	for _, p := range b.Processes {
		if (pid != 0 && p.PID == pid) || (job != "" && p.Job == job) {
			return true
		}
	}
	return false
}

func nodeNamed(f *Fleet, name string) *Node {
	for _, n := range f.Nodes() {
		if n.Name() == name {
			return n
		}
	}
	return nil
}

// TestStopIdleJob reclaims an idle notebook as the scheduler would and expects
// its end event, its processes gone and its idle truth cut at the stop.
func TestStopIdleJob(t *testing.T) {
	cfg := testConfig(2)
	f, _ := New(cfg)
	at := cfg.Start.Add(4 * time.Hour)
	f.Advance(at)
	var idle *Truth
	for _, tr := range f.Truth() {
		if tr.Kind == schemas.KindIdle && tr.End.IsZero() {
			idle = &tr
			break
		}
	}
	if idle == nil {
		t.Fatal("no ongoing idle job after 4 hours")
	}
	if err := f.Stop(idle.Job, schemas.StatusPreempted); err != nil {
		t.Fatal(err)
	}
	next := at.Add(cfg.Tick)
	var end *schemas.JobEvent
	for _, e := range f.Advance(next) {
		if e.Job == idle.Job && e.Event == schemas.EventEnd {
			end = &e
		}
	}
	if end == nil || end.Status != schemas.StatusPreempted || end.ExitCode != exitSIGTERM || end.TimeMs != at.UnixMilli()+1 {
		t.Fatalf("end event after Stop: %+v", end)
	}
	if processOf(t, nodeNamed(f, idle.Node), next, 0, idle.Job) {
		t.Error("the stopped job's process is still sampled")
	}
	for _, tr := range f.Truth() {
		if tr.Job == idle.Job && (tr.End.IsZero() || tr.End.After(time.UnixMilli(end.TimeMs))) {
			t.Errorf("truth %+v outlives the stop at %d", tr, end.TimeMs)
		}
	}
	if err := f.Stop(idle.Job, schemas.StatusCancelled); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("second Stop = %v, want ErrUnknownJob", err)
	}
}

// TestKillZombie kills a leftover process as the node agent would.
func TestKillZombie(t *testing.T) {
	cfg := testConfig(2)
	f, _ := New(cfg)
	at := cfg.Start.Add(12 * time.Hour)
	f.Advance(at)
	var z *Truth
	for _, tr := range f.Truth() {
		if tr.Kind == schemas.KindZombie && tr.End.IsZero() {
			z = &tr
			break
		}
	}
	if z == nil {
		t.Fatal("no ongoing zombie after 12 hours")
	}
	n := nodeNamed(f, z.Node)
	if !processOf(t, n, at, z.PID, "") {
		t.Fatalf("zombie pid %d not sampled on %s", z.PID, z.Node)
	}
	if err := f.Kill(z.Node, z.PID); err != nil {
		t.Fatal(err)
	}
	next := at.Add(cfg.Tick)
	f.Advance(next)
	if processOf(t, n, next, z.PID, "") {
		t.Error("killed process still sampled")
	}
	for _, tr := range f.Truth() {
		if tr.Kind == schemas.KindZombie && tr.Node == z.Node && tr.PID == z.PID && !tr.End.Equal(time.UnixMilli(at.UnixMilli()+1)) {
			t.Errorf("zombie truth after kill: %+v", tr)
		}
	}
	tests := []struct {
		name string
		node string
		pid  uint32
	}{
		{"already killed", z.Node, z.PID},
		{"no such pid", z.Node, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := f.Kill(tt.node, tt.pid); !errors.Is(err, ErrUnknownProcess) {
				t.Errorf("Kill = %v, want ErrUnknownProcess", err)
			}
		})
	}
	if err := f.Kill("no-such-node", 5); err == nil {
		t.Error("Kill on an unknown node succeeded")
	}
}
