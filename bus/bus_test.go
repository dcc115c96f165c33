package bus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
)

func TestToken(t *testing.T) {
	tests := []struct{ in, want string }{
		{"gpu-01", "gpu-01"},
		{"gpu-01.example.com", "gpu-01_example_com"},
		{"a*b>c d", "a_b_c_d"},
		{"", "_"},
	}
	for _, tt := range tests {
		if got := bus.Token(tt.in); got != tt.want {
			t.Errorf("Token(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := bus.SamplesSubject("c1", "n.1"); got != "gpupool.samples.c1.n_1" {
		t.Errorf("SamplesSubject = %q", got)
	}
}

func TestEnsureStreamsIdempotentAndUpdatesLimits(t *testing.T) {
	b := bustest.Start(t)
	ctx := t.Context()
	cfg := bus.DefaultStreamsConfig()
	if err := bus.EnsureStreams(ctx, b.JS, cfg); err != nil {
		t.Fatalf("second EnsureStreams: %v", err)
	}
	cfg.SamplesMaxAge = 5 * time.Hour
	if err := bus.EnsureStreams(ctx, b.JS, cfg); err != nil {
		t.Fatalf("EnsureStreams with new limits: %v", err)
	}
	s, err := b.JS.Stream(ctx, bus.StreamSamples)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxAge != 5*time.Hour {
		t.Errorf("samples MaxAge = %s, want the updated 5h", info.Config.MaxAge)
	}
	if info.Config.Retention != jetstream.LimitsPolicy {
		t.Errorf("samples retention = %v, want limits", info.Config.Retention)
	}
}

func TestStreamsValidate(t *testing.T) {
	cfg := bus.DefaultStreamsConfig()
	cfg.DuplicateWindow = 0
	if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "duplicate_window") {
		t.Fatalf("Validate() = %v, want an error naming duplicate_window", err)
	}
}

func TestEmbeddedKeepsMessagesAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	b := bustest.StartIn(t, dir)
	ctx := t.Context()
	for i := 0; i < 3; i++ {
		if _, err := b.JS.Publish(ctx, bus.SamplesSubject("c", "n"), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	b.Stop()
	b2 := bustest.StartIn(t, dir)
	s, err := b2.JS.Stream(ctx, bus.StreamSamples)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 3 {
		t.Fatalf("after restart the stream holds %d messages, want 3", info.State.Msgs)
	}
}

// TestParseSubjects: ingest takes a message's identity from the subject the
// server delivered it on, so the parsers accept exactly the subjects the roles
// publish on, each name one token.
func TestParseSubjects(t *testing.T) {
	for _, tt := range []struct {
		subject, cluster, node string
		ok                     bool
	}{
		{bus.SamplesSubject("c1", "gpu-01.example.com"), "c1", "gpu-01_example_com", true},
		{bus.SamplesSubject("", ""), "_", "_", true},
		{"gpupool.samples.c1", "", "", false},
		{"gpupool.samples.c1.n1.x", "", "", false},
		{"gpupool.samples.c1.", "", "", false},
		{"gpupool.jobs.c1", "", "", false},
	} {
		c, n, ok := bus.ParseSamplesSubject(tt.subject)
		if c != tt.cluster || n != tt.node || ok != tt.ok {
			t.Errorf("ParseSamplesSubject(%q) = %q, %q, %t; want %q, %q, %t", tt.subject, c, n, ok, tt.cluster, tt.node, tt.ok)
		}
	}
	for _, tt := range []struct {
		subject, cluster string
		scheduler, ok    bool
	}{
		{bus.JobsSubject("c1"), "c1", false, true},
		{bus.JobsSubject("eu.west"), "eu_west", false, true},
		{bus.SchedulerJobsSubject("c1"), "c1", true, true},
		{bus.SchedulerJobsSubject(""), "_", true, true},
		{bus.JobsSubject("scheduler"), "scheduler", false, true},
		{"gpupool.jobs.c1.collector", "", false, false},
		{"gpupool.jobs.c1.scheduler.x", "", false, false},
		{"gpupool.jobs.", "", false, false},
		{bus.SamplesSubject("c1", "n1"), "", false, false},
	} {
		c, s, ok := bus.ParseJobsSubject(tt.subject)
		if c != tt.cluster || s != tt.scheduler || ok != tt.ok {
			t.Errorf("ParseJobsSubject(%q) = %q, %t, %t; want %q, %t, %t", tt.subject, c, s, ok, tt.cluster, tt.scheduler, tt.ok)
		}
	}
}
