package findings

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestDefaultConfigValid(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	on := cfg.ForPool(PoolInferenceOnline)
	if on.Idle.Window != 2*time.Hour || on.Idle.ActiveThreshold != 0.01 || on.LowUtil.Enabled {
		t.Errorf("inference-online policy: %+v", on)
	}
	if dev := cfg.ForPool(PoolDev); dev.Idle.Window != 30*time.Minute || !dev.LowUtil.Enabled {
		t.Errorf("dev uses the defaults: %+v", dev)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"interval", func(c *Config) { c.Interval = 0 }, "interval: must be positive"},
		{"resolve after", func(c *Config) { c.ResolveAfter = time.Minute }, "resolve_after:"},
		{"hint interval", func(c *Config) { c.HintInterval = time.Second }, "hint_interval:"},
		{"coverage", func(c *Config) { c.MinCoverage = 1.5 }, "min_coverage:"},
		{"idle window", func(c *Config) { c.Defaults.Idle.Window = 0 }, "defaults.idle.window: must be positive"},
		{"pool ratio", func(c *Config) {
			t := c.Defaults
			t.Zombie.ActiveThreshold = 2
			c.Pools[PoolDev] = t
		}, "pools.dev.zombie.active_threshold: must be a ratio"},
		{"headroom", func(c *Config) { c.Defaults.WrongCard.MemHeadroom = 0.5 }, "defaults.wrong_card.mem_headroom"},
		{"no cards", func(c *Config) { c.Defaults.WrongCard.HighEndCards = nil }, "defaults.wrong_card.high_end_cards"},
		{"mig slices", func(c *Config) { c.CardOptions[0].Slices = 3 }, "card_options[0].slices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error with %q", err, tt.want)
			}
			if _, err := New(cfg, newFixtureless()); err == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
}

// newFixtureless is a store nothing is asked of: New must fail before using it.
func newFixtureless() Store { return &failingStore{} }

func TestConfigYAML(t *testing.T) {
	doc := `
interval: 10m
resolve_after: 30m
defaults:
  zombie:
    orphan_window: 20m
pools:
  dev:
    idle: {window: 1h, max_active_fraction: 0.02}
  inference-online:
    low_util: {enabled: true}
`
	cfg := DefaultConfig()
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Interval != 10*time.Minute || cfg.ResolveAfter != 30*time.Minute || cfg.HintInterval != 30*time.Minute {
		t.Errorf("top level: %v %v %v", cfg.Interval, cfg.ResolveAfter, cfg.HintInterval)
	}
	dev := cfg.ForPool(PoolDev)
	if dev.Idle.Window != time.Hour || dev.Idle.MaxActiveFraction != 0.02 || dev.Idle.ActiveThreshold != 0.05 ||
		dev.Zombie.OrphanWindow != 20*time.Minute {
		t.Errorf("dev overrides two idle keys on top of the (changed) defaults: %+v", dev)
	}
	on := cfg.ForPool(PoolInferenceOnline)
	if on.Idle.Window != 2*time.Hour || !on.LowUtil.Enabled || on.Zombie.OrphanWindow != 20*time.Minute {
		t.Errorf("inference-online keeps its built-in idle policy, takes the new defaults and its own change: %+v", on)
	}
	if prod := cfg.ForPool(PoolTrainingProd); prod.Zombie.OrphanWindow != 20*time.Minute {
		t.Errorf("an unlisted pool uses the defaults: %+v", prod)
	}

	for _, bad := range []string{
		"idle_window: 5m",                       // not a key
		"defaults: {idle: {windw: 5m}}",         // typo inside defaults
		"pools: {dev: {idle: {windw: 5m}}}",     // typo inside a pool
		"pools: {dev: {idle: {window: soon}}}",  // not a duration
		"pools: [dev]",                          // not a mapping
		"defaults: {wrong_card: {window: -1h}}", // decodes; Validate rejects it
	} {
		cfg := DefaultConfig()
		err := yaml.Unmarshal([]byte(bad), &cfg)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func TestPoolGroups(t *testing.T) {
	cfg := DefaultConfig()
	idle := poolGroups(cfg, func(t Thresholds) IdleConfig { return t.Idle }, func(c IdleConfig) bool { return c.Enabled })
	if len(idle) != 2 || idle[0].include || idle[0].has(PoolInferenceOnline) || !idle[0].has(PoolDev) ||
		!idle[1].include || !idle[1].has(PoolInferenceOnline) || idle[1].has(PoolDev) {
		t.Errorf("idle groups: %+v", idle)
	}
	low := poolGroups(cfg, func(t Thresholds) LowUtilConfig { return t.LowUtil }, func(c LowUtilConfig) bool { return c.Enabled })
	if len(low) != 1 || low[0].has(PoolInferenceOnline) || !low[0].has("any-other-pool") {
		t.Errorf("low_util groups: %+v; inference-online must be left out", low)
	}
	// Two pools with the same settings share one group (one query).
	d := cfg.Defaults
	d.MemoryBound.Window = 3 * time.Hour
	cfg.Pools["a"], cfg.Pools["b"] = d, d
	mb := poolGroups(cfg, func(t Thresholds) MemoryBoundConfig { return t.MemoryBound }, func(c MemoryBoundConfig) bool { return c.Enabled })
	if len(mb) != 2 || len(mb[1].pools) != 2 || mb[0].has("a") || !mb[1].has("b") {
		t.Errorf("memory_bound groups: %+v", mb)
	}
}

func TestUnitWeightAndWindow(t *testing.T) {
	for mig, want := range map[string]float64{"": 1, "1g.10gb": 1.0 / 7, "3g.40gb": 3.0 / 7, "7g.80gb": 1, "junk": 1} {
		if got := unitWeight(mig); got != want {
			t.Errorf("unitWeight(%q) = %g, want %g", mig, got, want)
		}
	}
	for d, want := range map[time.Duration]string{30 * time.Minute: "30m", 2 * time.Hour: "2h", 90 * time.Minute: "1h30m", 45 * time.Second: "45s"} {
		if got := fmtWindow(d); got != want {
			t.Errorf("fmtWindow(%v) = %q, want %q", d, got, want)
		}
	}
}
