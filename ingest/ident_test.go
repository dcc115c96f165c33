package ingest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
)

// TestJobEventIdentifiersDeadLettered: job events whose identifiers break the
// rules of schemas/ident.go (a team of 100 kB, a queue with a newline, a job
// key with a space) are dead-lettered with reason invalid_identifier, and the
// good events beside them are stored.
func TestJobEventIdentifiersDeadLettered(t *testing.T) {
	e := newEnv(t)
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	stop, ing := startIngest(t, e, testConfig())
	publishJobs(t, e.bus.JS, 2, start)
	bad := []schemas.JobEvent{
		{Team: strings.Repeat("t", 100_000)},
		{Team: "nlp", Queue: "dev\nx"},
		{Job: "job with spaces", Team: "nlp"},
		{Team: "nlp", Labels: map[string]string{"k": "v\x00"}},
	}
	for i, ev := range bad {
		ev.TimeMs, ev.Event = start.UnixMilli(), schemas.EventSubmit
		if ev.Job == "" {
			ev.Job = "bad-job"
		}
		data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Producer: "hostile", Seq: uint64(i), Events: []schemas.JobEvent{ev}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.bus.JS.PublishMsg(t.Context(), &nats.Msg{Subject: bus.JobsSubject("c1"), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	waitCaughtUp(t, e.bus.JS, testConfig().Durable)
	_ = stop()
	if got := count(t, e.store, "SELECT count() AS n FROM job_events"); got != 4 {
		t.Errorf("job_events has %d rows, want the 4 good ones", got)
	}
	if got := ing.Stats().DeadLetters; got != uint64(len(bad)) {
		t.Fatalf("dead letters = %d, want %d", got, len(bad))
	}
	dl, err := e.bus.JS.Stream(t.Context(), bus.StreamDeadLetter)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= uint64(len(bad)); seq++ {
		m, err := dl.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		if r := m.Header.Get(ingest.HeaderReason); r != "invalid_identifier" {
			t.Errorf("dead letter %d: reason %q, want invalid_identifier (error %s)", seq, r, m.Header.Get(ingest.HeaderError))
		}
		if len(m.Header.Get(ingest.HeaderError)) > 1000 {
			t.Errorf("dead letter %d: error header of %d bytes copies the value", seq, len(m.Header.Get(ingest.HeaderError)))
		}
	}
}
