package collector

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpupool/gpupool/bus"
)

func notice(reason, rows, text string) *nats.Msg {
	m := &nats.Msg{Subject: bus.RejectedSubject("c1", "n1"), Data: []byte(text), Header: nats.Header{}}
	if reason != "" {
		m.Header.Set(bus.HeaderRejectReason, reason)
	}
	if rows != "" {
		m.Header.Set(bus.HeaderRejectRows, rows)
	}
	return m
}

// TestRejectionsRateLimited: every notice is counted by reason at once; the
// warning comes at the first notice, then at most once a RejectionLogEvery with
// what came meanwhile (per reason, with an example error); Stop logs the rest.
func TestRejectionsRateLimited(t *testing.T) {
	var logs bytes.Buffer
	clock := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	m := NewMetrics(nil)
	r := &Rejections{log: slog.New(slog.NewTextHandler(&logs, nil)), metrics: m, every: time.Minute,
		now: func() time.Time { return clock }, pending: map[string]*rejected{}}
	warnings := func() int { return strings.Count(logs.String(), "ingest dead-lettered this node's samples") }

	r.handle(notice("invalid_value", "4", "gpu row 0: timestamp too far in the future"))
	if warnings() != 1 || !strings.Contains(logs.String(), "rows=4") {
		t.Fatalf("first notice: %d warnings:\n%s", warnings(), logs.String())
	}
	for range 100 {
		clock = clock.Add(100 * time.Millisecond)
		r.handle(notice("invalid_value", "4", "gpu row 0: timestamp too far in the future"))
	}
	r.handle(notice("malformed", "", "proto: cannot parse"))
	r.handle(notice("", "x", ""))
	if warnings() != 1 {
		t.Fatalf("%d warnings within a minute, want 1:\n%s", warnings(), logs.String())
	}
	if got := testutil.ToFloat64(m.DeadLettered("invalid_value")); got != 101 {
		t.Errorf("invalid_value counted %g, want 101", got)
	}
	if testutil.ToFloat64(m.DeadLettered("malformed")) != 1 || testutil.ToFloat64(m.DeadLettered("other")) != 1 {
		t.Errorf("malformed or other not counted")
	}
	clock = clock.Add(time.Minute)
	r.handle(notice("invalid_value", "4", "again"))
	if warnings() != 4 || !strings.Contains(logs.String(), "batches=101 rows=404 reason=invalid_value") ||
		!strings.Contains(logs.String(), "reason=malformed") {
		t.Fatalf("after a minute: %d warnings, want one per reason of the minute (3 more):\n%s", warnings(), logs.String())
	}
	r.handle(notice("schema_version", "2", "samples/v999"))
	r.Stop()
	if warnings() != 5 || !strings.Contains(logs.String(), "reason=schema_version") {
		t.Fatalf("Stop did not log the rest:\n%s", logs.String())
	}
	if st := r.Stats(); st.Batches != 105 || st.Rows != 4+400+4+2 {
		t.Errorf("stats %+v", st)
	}
}
