package collector

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/schemas"
)

// flakyPublisher fails the first fails publishes, then records messages.
type flakyPublisher struct {
	mu    sync.Mutex
	fails int
	msgs  []*nats.Msg
}

func (p *flakyPublisher) PublishMsg(_ context.Context, msg *nats.Msg, _ ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fails > 0 {
		p.fails--
		return nil, errors.New("nats: no responders")
	}
	cp := *msg
	cp.Data = append([]byte(nil), msg.Data...)
	p.msgs = append(p.msgs, &cp)
	return &jetstream.PubAck{Sequence: uint64(len(p.msgs))}, nil
}

type oneGPU struct{}

func (oneGPU) Sample(_ context.Context, at time.Time, b *schemas.SampleBatch) error {
	g := schemas.NewGPUSample()
	g.TimeMs, g.GPUUUID = at.UnixMilli(), "GPU-1"
	b.GPUs = append(b.GPUs, g)
	b.Processes = append(b.Processes,
		schemas.ProcessSample{TimeMs: at.UnixMilli(), GPUUUID: "GPU-1", PID: 7, Job: "j"},
		schemas.ProcessSample{TimeMs: at.UnixMilli(), GPUUUID: "GPU-1", PID: 8})
	return nil
}

type failingSource struct{}

func (failingSource) Sample(context.Context, time.Time, *schemas.SampleBatch) error {
	return errors.New("nvml: GPU is lost")
}

func newTestCollector(t *testing.T, src Source, pub Publisher) *Collector {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Cluster, cfg.Node, cfg.MaxBackoff = "c.1", "node.a", 20*time.Millisecond
	c, err := New(cfg, src, pub)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCollectRetriesUntilAcked(t *testing.T) {
	pub := &flakyPublisher{fails: 3}
	c := newTestCollector(t, oneGPU{}, pub)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 2; i++ {
		if err := c.Collect(t.Context(), at.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if len(pub.msgs) != 2 {
		t.Fatalf("%d messages acked, want 2", len(pub.msgs))
	}
	st := c.Stats()
	if st.Batches != 2 || st.GPURows != 2 || st.ProcessRows != 4 || st.PublishErrors != 3 || st.UnattributedRows != 2 {
		t.Errorf("stats %+v", st)
	}
	m := pub.msgs[1]
	if m.Subject != "gpupool.samples.c_1.node_a" {
		t.Errorf("subject %q", m.Subject)
	}
	if id := m.Header.Get(nats.MsgIdHdr); !strings.HasPrefix(id, c.ID()+"-") || !strings.HasSuffix(id, "-2") {
		t.Errorf("message id %q, want <collector id>-2", id)
	}
	if m.Header.Get(schemas.HeaderSchema) != schemas.SchemaSamples {
		t.Errorf("schema header %q", m.Header.Get(schemas.HeaderSchema))
	}
	var b schemas.SampleBatch
	if err := schemas.NewDecoder().Decode(m.Data, &b); err != nil {
		t.Fatal(err)
	}
	if b.Cluster != "c.1" || b.Node != "node.a" || b.Seq != 2 || b.CollectorID != c.ID() || len(b.Processes) != 2 {
		t.Errorf("batch %+v", b)
	}
}

func TestCollectStopsWithContext(t *testing.T) {
	pub := &flakyPublisher{fails: 1 << 30}
	c := newTestCollector(t, oneGPU{}, pub)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := c.Collect(ctx, time.Now())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Collect with NATS down = %v, want the context's error", err)
	}
	if c.Stats().Batches != 0 {
		t.Error("an unacknowledged batch was counted as published")
	}
}

func TestCollectSourceError(t *testing.T) {
	c := newTestCollector(t, failingSource{}, &flakyPublisher{})
	if err := c.Collect(t.Context(), time.Now()); err == nil || !strings.Contains(err.Error(), "GPU is lost") {
		t.Fatalf("source error not reported: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Node = ""
	if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "node") {
		t.Fatalf("Validate = %v, want an error naming node", err)
	}
	if _, err := New(DefaultConfig(), nil, nil); err == nil {
		t.Fatal("New accepted an invalid config")
	}
	// What ingest would dead-letter every batch for is refused before a sample
	// is taken.
	for _, c := range []struct{ cluster, node, want string }{
		{"us east", "n1", `cluster: "us east" has ' '`}, {"c1", "gpu node\n", "node: "}, {"c1", strings.Repeat("n", 254), "node: "},
	} {
		cfg := DefaultConfig()
		cfg.Cluster, cfg.Node = c.cluster, c.node
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("cluster %q node %.20q: %v, want %q", c.cluster, c.node, err, c.want)
		}
	}
}

func TestStatsAdd(t *testing.T) {
	a := Stats{Batches: 1, GPURows: 2, ProcessRows: 3, PublishErrors: 4, UnattributedRows: 5, JobEvents: 6, Spooled: 7, SpoolDropped: 8, SpoolPending: 9}
	var s Stats
	s.Add(a)
	s.Add(a)
	want := Stats{Batches: 2, GPURows: 4, ProcessRows: 6, PublishErrors: 8, UnattributedRows: 10, JobEvents: 12, Spooled: 14, SpoolDropped: 16, SpoolPending: 18}
	if s != want {
		t.Fatalf("sum %+v, want %+v", s, want)
	}
}
