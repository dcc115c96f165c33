package traceanalysis

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector/replay"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
)

// traceMessages reads a trace's records as a collector and a scheduler would
// publish them: one sample batch per node and time, one message per job event.
func traceMessages(t *testing.T, cfg Config, lines []string) []*nats.Msg {
	t.Helper()
	rd := trace.NewReader(strings.NewReader(strings.Join(lines, "\n")+"\n"), trace.ReaderOptions{Strict: true, ReorderWindow: cfg.ReorderWindow, FutureSkew: cfg.FutureSkew})
	player, err := replay.New(rd, replay.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*nats.Msg
	for {
		tick, err := player.Next(t.Context())
		if err != nil {
			break
		}
		for _, b := range tick.Batches {
			data, err := schemas.NewEncoder().Encode(nil, b)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, &nats.Msg{Subject: bus.SamplesSubject(b.Cluster, b.Node), Data: data})
		}
		for _, e := range tick.Jobs {
			data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Producer: "trace", Seq: uint64(len(msgs)), Events: []schemas.JobEvent{e}})
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, &nats.Msg{Subject: bus.JobsSubject(e.Cluster), Data: data})
		}
	}
	if len(player.Errors()) > 0 {
		t.Fatalf("the trace has bad lines: %v", player.Errors()[0])
	}
	return msgs
}

// billOverBus publishes msgs through an embedded NATS server into ingest, which
// stores them in an embedded store of its own, and returns the analyzer's
// chargeback of [from, to] there.
func billOverBus(t *testing.T, cfg Config, msgs []*nats.Msg, from, to time.Time) []chargeback.Row {
	t.Helper()
	b := bustest.Start(t)
	scfg := cfg.Store
	scfg.Path = t.TempDir()
	st, err := chdb.Open(scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	if _, err := store.Migrate(ctx, st, schemas.MigrationParams{DB: scfg.Database, RawTTLDays: rawTTLDays}); err != nil {
		t.Fatal(err)
	}
	if _, err := pricebook.Load(ctx, st, cfg.Prices); err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		m.Header = nats.Header{}
		m.Header.Set(nats.MsgIdHdr, "trace-"+strconv.Itoa(i))
		if _, err := b.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	icfg := ingest.DefaultConfig()
	icfg.BatchAge = 50 * time.Millisecond
	ing, err := ingest.New(icfg, b.JS, st)
	if err != nil {
		t.Fatal(err)
	}
	ictx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ing.Run(ictx) }()
	// Wait on progress: fail only when the backlog has not come below its lowest
	// for 30 s.
	lowest, lowAt := uint64(math.MaxUint64), time.Now()
	for {
		backlog, err := ingest.Backlog(ctx, b.JS, icfg.Durable)
		if err == nil {
			n := backlog["samples"] + backlog["jobs"]
			if n == 0 {
				break
			}
			if n < lowest {
				lowest, lowAt = n, time.Now()
			}
		}
		if time.Since(lowAt) > 30*time.Second {
			stop()
			t.Fatalf("ingest made no progress for 30 s: backlog %v, %v", backlog, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := ing.Stats(); st.DeadLetters > 0 {
		t.Fatalf("ingest dead-lettered %d messages of a clean trace", st.DeadLetters)
	}
	rows, err := chargeback.Compute(ctx, st, from, to.Add(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// sameBill compares two chargebacks job by job: GPU-hours and cost.
func sameBill(t *testing.T, name string, got, want []chargeback.Row) {
	t.Helper()
	byJob := func(rows []chargeback.Row) map[string]chargeback.Row {
		m := map[string]chargeback.Row{}
		for _, r := range rows {
			m[fmt.Sprintf("%s/%d/%s", r.Job, r.Attempt, r.Card)] = r
		}
		return m
	}
	g, w := byJob(got), byJob(want)
	if len(g) != len(w) || len(w) == 0 {
		t.Errorf("%s: %d chargeback rows over the bus, %d from analyze", name, len(g), len(w))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
	for k, wr := range w {
		gr, ok := g[k]
		switch {
		case !ok:
			t.Errorf("%s: %s billed by analyze (%v GPU-hours), not over the bus", name, k, wr.GPUHours)
		case !near(gr.GPUHours, wr.GPUHours):
			t.Errorf("%s: %s: %v GPU-hours over the bus, %v from analyze", name, k, gr.GPUHours, wr.GPUHours)
		case (gr.Cost == nil) != (wr.Cost == nil) || gr.Cost != nil && !near(*gr.Cost, *wr.Cost):
			t.Errorf("%s: %s: cost %v over the bus, %v from analyze", name, k, fmtCost(gr.Cost), fmtCost(wr.Cost))
		case gr.Team != wr.Team:
			t.Errorf("%s: %s: team %q over the bus, %q from analyze", name, k, gr.Team, wr.Team)
		}
	}
}

func fmtCost(c *float64) string {
	if c == nil {
		return "none"
	}
	return strconv.FormatFloat(*c, 'f', -1, 64)
}

// TestAnalyzeBillsWhatIngestBills: analyze --trace bills a trace exactly as
// ingest over the bus and the analyzer's chargeback bill the same records, sent
// in the trace's order or shuffled end to end (ingest takes samples in any
// order; the trace reader reorders within its window), job by job in GPU-hours
// and cost; and so does the trace shuffled within the window.
func TestAnalyzeBillsWhatIngestBills(t *testing.T) {
	cfg := testConfig(t)
	clean := strings.Split(strings.TrimSuffix(string(fixtureTraceOf(t, 20*time.Minute, 10*time.Second)), "\n"), "\n")
	_, rep, err := billOf(t, cfg, clean)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(38, 2))
	shuffled := make([]string, len(clean))
	copy(shuffled, clean)
	for i := 0; i < len(shuffled); i += 20 {
		b := shuffled[i:min(i+20, len(shuffled))]
		rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	}
	_, srep, err := billOf(t, cfg, shuffled)
	if err != nil {
		t.Fatal(err)
	}
	sameBill(t, "analyze on the trace shuffled within the window", srep.Chargeback, rep.Chargeback)

	msgs := traceMessages(t, cfg, clean)
	sameBill(t, "in order over the bus", billOverBus(t, cfg, msgs, rep.Trace.Start, rep.Trace.End), rep.Chargeback)
	rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	sameBill(t, "shuffled over the bus", billOverBus(t, cfg, msgs, rep.Trace.Start, rep.Trace.End), rep.Chargeback)
	for _, r := range rep.Chargeback {
		t.Logf("%s: %.6f GPU-hours, cost %s", r.Job, r.GPUHours, fmtCost(r.Cost))
	}
}
