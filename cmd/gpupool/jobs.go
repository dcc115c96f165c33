package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/schemas"
)

// jobPublisher sends job events on behalf of a scheduler that is not there: the
// simulator's, or a replayed trace's. Each batch has a message ID, so a retried
// publish is stored once.
type jobPublisher struct {
	js       jetstream.JetStream
	producer string
	log      *slog.Logger
	seq      uint64
	count    atomic.Uint64 // events published
	// rec, when set, records every event published (collector --record).
	rec collector.Recorder
}

func newJobPublisher(js jetstream.JetStream, kind string, log *slog.Logger) *jobPublisher {
	var id [4]byte
	_, _ = rand.Read(id[:])
	return &jobPublisher{js: js, producer: kind + "-" + hex.EncodeToString(id[:]), log: log}
}

// publish sends events, one batch per cluster, retrying until acknowledged.
func (p *jobPublisher) publish(ctx context.Context, events []schemas.JobEvent) error {
	byCluster := map[string][]schemas.JobEvent{}
	var order []string
	for _, e := range events {
		if _, ok := byCluster[e.Cluster]; !ok {
			order = append(order, e.Cluster)
		}
		byCluster[e.Cluster] = append(byCluster[e.Cluster], e)
	}
	for _, cluster := range order {
		evs := byCluster[cluster]
		p.seq++
		data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Producer: p.producer, Seq: p.seq, Events: evs})
		if err != nil {
			return fmt.Errorf("encode job events: %w", err)
		}
		msg := &nats.Msg{Subject: bus.JobsSubject(cluster), Data: data, Header: nats.Header{}}
		msg.Header.Set(schemas.HeaderSchema, schemas.SchemaJobs)
		msg.Header.Set(nats.MsgIdHdr, p.producer+"-"+strconv.FormatUint(p.seq, 10))
		for attempt := 0; ; attempt++ {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := p.js.PublishMsg(pctx, msg)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p.log.Warn("publish job events failed, retrying", "attempt", attempt+1, "err", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, 5*time.Second)):
			}
		}
		p.count.Add(uint64(len(evs)))
		if p.rec != nil {
			if err := p.rec.RecordJobs(evs); err != nil {
				p.log.Warn("record job events", "err", err)
			}
		}
	}
	return nil
}
