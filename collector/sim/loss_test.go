package sim

import (
	"context"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// TestNodeLossAndPreemption: over two days with a node lost about every 6 hours
// and 20 % of batch attempts preempted, a lost node reports no sample while it is
// down, takes no job, and its jobs end failed 10–15 minutes after it went, with
// node_lost as their truth; preempted attempts end preempted (exit 143) and come
// back as their next attempt; with neither configured the fleet is the one it was.
func TestNodeLossAndPreemption(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Start, cfg.Tick = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), time.Minute
	cfg.NodeLossPerNodeDay, cfg.PreemptShare = 0.5, 0.2
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type started struct {
		nodes []string
		at    time.Time
	}
	var starts []started
	ends := map[string]schemas.JobEvent{}
	reruns := map[string]bool{}
	silentTicks := 0
	var b schemas.SampleBatch
	end := cfg.Start.Add(48 * time.Hour)
	for at := cfg.Start; at.Before(end); at = at.Add(cfg.Tick) {
		for _, e := range f.Advance(at) {
			switch e.Event {
			case schemas.EventStart:
				starts = append(starts, started{e.Nodes, time.UnixMilli(e.TimeMs).UTC()})
			case schemas.EventEnd:
				ends[e.Job] = e
			case schemas.EventSubmit:
				if e.RerunOf != "" {
					reruns[e.RerunOf] = true
				}
			}
		}
		for _, n := range f.Nodes() {
			b.GPUs, b.Processes = b.GPUs[:0], b.Processes[:0]
			if err := n.Sample(context.Background(), at, &b); err != nil {
				t.Fatal(err)
			}
			if n.down(at.UnixMilli()) {
				silentTicks++
				if len(b.GPUs)+len(b.Processes) > 0 {
					t.Fatalf("%s is lost at %s but reported %d GPUs", n.Name(), at, len(b.GPUs))
				}
			}
		}
	}
	losses := f.NodeLosses()
	if len(losses) < 3 || silentTicks == 0 {
		t.Fatalf("%d node losses, %d silent node-minutes in 2 days: want several", len(losses), silentTicks)
	}
	for _, s := range starts {
		for _, l := range losses {
			for _, n := range s.nodes {
				if n == l.Node && !s.at.Before(l.From) && s.at.Before(l.To) {
					t.Errorf("a job started on %s at %s while it was lost (%s–%s)", n, s.at, l.From, l.To)
				}
			}
		}
	}
	counts := map[string]int{}
	for _, fl := range f.Failures() {
		counts[fl.Reason]++
		e, ok := ends[fl.Job]
		if !ok {
			t.Errorf("%s: truth %s but no end event", fl.Job, fl.Reason)
			continue
		}
		switch fl.Reason {
		case ReasonNodeLost:
			lostAt := time.Time{}
			for _, l := range losses {
				if !fl.End.Before(l.From.Add(10*time.Minute)) && !fl.End.After(l.From.Add(15*time.Minute)) {
					lostAt = l.From
				}
			}
			if e.Status != schemas.StatusFailed || lostAt.IsZero() || fl.XID != 0 {
				t.Errorf("%s lost: status %s, ended %s, xid %d; want failed 10–15 min after a loss", fl.Job, e.Status, fl.End, fl.XID)
			}
		case ReasonPreempted:
			if e.Status != schemas.StatusPreempted || e.ExitCode != exitSIGTERM || !reruns[fl.Job] {
				t.Errorf("%s preempted: status %s exit %d, requeued %v", fl.Job, e.Status, e.ExitCode, reruns[fl.Job])
			}
		}
	}
	t.Logf("%d node losses, %d silent node-minutes; failures %v", len(losses), silentTicks, counts)
	if counts[ReasonNodeLost] == 0 || counts[ReasonPreempted] == 0 {
		t.Errorf("failures %v: want node_lost and preempted", counts)
	}

	// Off, none of it: no loss, no preemption.
	cfg.NodeLossPerNodeDay, cfg.PreemptShare = 0, 0
	plain, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for at := cfg.Start; at.Before(end); at = at.Add(time.Hour) {
		plain.Advance(at)
	}
	for _, fl := range plain.Failures() {
		if fl.Reason == ReasonNodeLost || fl.Reason == ReasonPreempted {
			t.Fatalf("plain fleet planted %s (%s)", fl.Reason, fl.Job)
		}
	}
	if len(plain.NodeLosses()) != 0 {
		t.Errorf("plain fleet lost %d nodes", len(plain.NodeLosses()))
	}
}
