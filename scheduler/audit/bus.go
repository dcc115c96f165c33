package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
)

// BusPublisher publishes the scheduler's job events to JetStream, one batch per
// cluster on gpupool.jobs.<cluster>, each with a message ID so that a retried
// publish is stored once. It is safe for concurrent use.
type BusPublisher struct {
	js       jetstream.JetStream
	producer string
	timeout  time.Duration

	mu  sync.Mutex
	seq uint64
}

var _ scheduler.Publisher = (*BusPublisher)(nil)

// NewBusPublisher returns a publisher on js. Its producer name is
// "scheduler-<random>", so that message IDs of two schedulers never collide.
func NewBusPublisher(js jetstream.JetStream) *BusPublisher {
	var id [4]byte
	_, _ = rand.Read(id[:])
	return &BusPublisher{js: js, producer: "scheduler-" + hex.EncodeToString(id[:]), timeout: 5 * time.Second}
}

// Publish sends events, grouped by cluster, in order. A failed publish returns an
// error; the caller decides whether to retry (the scheduler logs and counts it).
func (p *BusPublisher) Publish(ctx context.Context, events []schemas.JobEvent) error {
	var order []string
	byCluster := map[string][]schemas.JobEvent{}
	for _, e := range events {
		if _, ok := byCluster[e.Cluster]; !ok {
			order = append(order, e.Cluster)
		}
		byCluster[e.Cluster] = append(byCluster[e.Cluster], e)
	}
	for _, cluster := range order {
		p.mu.Lock()
		p.seq++
		seq := p.seq
		p.mu.Unlock()
		data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Producer: p.producer, Seq: seq, Events: byCluster[cluster]})
		if err != nil {
			return fmt.Errorf("audit: encode job events: %w", err)
		}
		msg := &nats.Msg{Subject: bus.JobsSubject(cluster), Data: data, Header: nats.Header{}}
		msg.Header.Set(schemas.HeaderSchema, schemas.SchemaJobs)
		msg.Header.Set(nats.MsgIdHdr, p.producer+"-"+strconv.FormatUint(seq, 10))
		pctx, cancel := context.WithTimeout(ctx, p.timeout)
		_, err = p.js.PublishMsg(pctx, msg)
		cancel()
		if err != nil {
			return fmt.Errorf("audit: publish %d job events to %s: %w", len(byCluster[cluster]), msg.Subject, err)
		}
	}
	return nil
}
