package daemon

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector/sim"
)

// TestConfig checks each source's settings are validated and named, and Resolve
// gives a real source its spool and attribution the node.
func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" : valid
	}{
		{"default", func(*Config) {}, ""},
		{"unknown source", func(c *Config) { c.Source = "prometheus" }, `source: "prometheus"`},
		{"replay without a trace", func(c *Config) { c.Source = SourceReplay }, "trace.file:"},
		{"negative speed", func(c *Config) { c.Trace.Speed = -1 }, "trace.speed:"},
		{"agent without a key or secret is off", func(c *Config) { c.Agent.PublicKeyFile, c.Agent.SecretFile = "", "" }, ""},
		{"agent with both a key and a secret", func(c *Config) { c.Agent.PublicKeyFile, c.Agent.SecretFile = "/k.pub", "/s" }, "agent.public_key_file and secret_file:"},
		{"bad collector interval", func(c *Config) { c.Interval = 0 }, "interval:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Cluster, c.Node = "c1", "n1"
			tc.edit(&c)
			c.Resolve(t.TempDir())
			err := c.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	c := DefaultConfig()
	c.Cluster = "c1"
	c.Resolve("/var/lib/gpupool")
	if c.Node == "" || c.Spool.Dir != filepath.Join("/var/lib/gpupool", "spool") || c.Attribution.Node != c.Node || c.Agent.Cluster != "c1" {
		t.Errorf("resolved %+v", c)
	}
	// The agent always keeps its record of accepted commands: a restart forgets none.
	if c.Agent.StateDir != filepath.Join("/var/lib/gpupool", "agent") {
		t.Errorf("agent state_dir %q, want <data_dir>/agent", c.Agent.StateDir)
	}
	c = DefaultConfig()
	c.Source = SourceSim
	if c.Resolve("/var/lib/gpupool"); c.Spool.Dir != "" {
		t.Errorf("a simulation spools to %s", c.Spool.Dir)
	}
}

// TestRunSimAndRecord runs the sim source for ten ticks into a real server,
// recording it: the streams hold what one node's ten ticks publish, and the
// recording replays into a second server with the same rows.
func TestRunSimAndRecord(t *testing.T) {
	fleet := sim.DefaultConfig()
	fleet.Clusters, fleet.NodesPerCluster, fleet.GPUsPerNode = 1, 1, 2
	fleet.Start = time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	cfg := DefaultConfig()
	cfg.Source, cfg.Record, cfg.Cluster = SourceSim, filepath.Join(t.TempDir(), "fleet.jsonl"), "c1"
	cfg.Resolve(t.TempDir())
	b := bustest.Start(t)
	conn := &bus.Conn{Server: b.Server, NC: b.Conn, JS: b.JS}
	d, err := New(cfg, fleet, conn, WithSimulation(10*fleet.Tick, 0, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := b.Stored(t)
	if got.SampleBatches != 10 || got.GPURows < 20 {
		t.Fatalf("stored %+v, want 10 batches of at least 2 GPUs", got)
	}

	replayed := bustest.Start(t)
	cfg.Source, cfg.Record, cfg.Trace.File, cfg.Trace.Speed = SourceReplay, "", cfg.Record, 0
	d, err = New(cfg, fleet, &bus.Conn{Server: replayed.Server, NC: replayed.Conn, JS: replayed.JS})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if again := replayed.Stored(t); again.GPURows != got.GPURows || again.ProcessRows != got.ProcessRows || again.JobEvents != got.JobEvents {
		t.Fatalf("replayed %+v, recorded %+v", again, got)
	}
}

// TestPlaceSimulation: a simulation is placed where ingest stores what it
// publishes, or refused with what to do.
func TestPlaceSimulation(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 5, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		start     time.Time
		span      time.Duration
		speed     float64
		wantStart time.Time
		wantErr   string
	}{
		{"real time starts now", time.Time{}, 0, 1, now.Truncate(10 * time.Second), ""},
		{"fast with a span ends now", time.Time{}, 12 * time.Hour, 0, now.Add(-12 * time.Hour).Truncate(10 * time.Second), ""},
		{"fast without an end backfills a day", time.Time{}, 0, 0, now.Add(-DefaultBackfill).Truncate(10 * time.Second), ""},
		{"a configured start is kept", now.Add(-48 * time.Hour), 24 * time.Hour, 0, now.Add(-48 * time.Hour), ""},
		{"a configured start that ends in the future", now.Add(-time.Hour), 12 * time.Hour, 60, time.Time{}, "more than 1m0s ahead of now"},
		{"real time from the future", now.Add(time.Hour), 0, 1, time.Time{}, "ingest dead-letters them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fleet := sim.DefaultConfig()
			fleet.Start = tc.start
			cfg := DefaultConfig()
			cfg.Source, cfg.Cluster, cfg.Node = SourceSim, "c1", "n1"
			d, err := New(cfg, fleet, nil, WithSimulation(tc.span, tc.speed, time.Minute), WithClock(func() time.Time { return now }))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !d.fleet.Start.Equal(tc.wantStart) {
				t.Fatalf("start %v, err %v; want %s", d.fleet.Start, err, tc.wantStart)
			}
		})
	}
}
