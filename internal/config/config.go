// Package config is gpupool's one configuration file: the settings of every
// component under one YAML document, with defaults, strict parsing (an unknown key is
// an error naming it and its line) and validation that names the failing field by its
// path, e.g. "ingest.batch_rows: 0 must be at least 1".
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector/daemon"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/console"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/reports/alerts"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store/backend"
)

// Config is the whole configuration file.
type Config struct {
	// DataDir is where the embedded NATS server and ClickHouse engine keep their
	// data unless bus.embedded.data_dir or store.chdb.path say otherwise.
	DataDir string `yaml:"data_dir"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
	// MetricsListen is the address of the /metrics, /healthz and /readyz endpoint
	// ("" disables it).
	MetricsListen string         `yaml:"metrics_listen"`
	Bus           bus.Config     `yaml:"bus"`
	Store         backend.Config `yaml:"store"`
	Collector     daemon.Config  `yaml:"collector"`
	Ingest        ingest.Config  `yaml:"ingest"`
	Sim           sim.Config     `yaml:"sim"`
	SQL           SQLConfig      `yaml:"sql"`
	Demo          DemoConfig     `yaml:"demo"`
	// Scheduler is the pool's model (cards, clusters, pools, queues, priorities),
	// its policies and the scheduler service's settings.
	Scheduler scheduler.Config `yaml:"scheduler"`
	// Reports is `gpupool reports`: scheduled chargeback reports, where they are
	// written and where they are posted.
	Reports reports.Config `yaml:"reports"`
	// Analyzer is the analyzer service: pass interval, detector thresholds per
	// pool, the price book file.
	Analyzer analyzer.Config `yaml:"analyzer"`
	// Alerts is `gpupool alerts`: findings and scheduler notices to Slack, routed
	// per team.
	Alerts alerts.Config `yaml:"alerts"`
	// MetricsWebConfig is an exporter-toolkit web configuration file (TLS, basic
	// auth) that every command's metrics endpoint serves behind ("" for plain HTTP).
	MetricsWebConfig string `yaml:"metrics_web_config"`
	// MetricsInsecure lets a metrics endpoint listen on a non-loopback address
	// without TLS (plain HTTP on purpose, e.g. scraped inside a cluster network);
	// without it such an endpoint needs metrics_web_config with tls_server_config.
	MetricsInsecure bool `yaml:"metrics_insecure"`
	// Auth is how callers of the HTTP APIs (the scheduler's) prove who they are:
	// tokens, OIDC, client certificates, TLS, limits per identity.
	Auth auth.Config `yaml:"auth"`
	// Console is `gpupool console`'s settings (its --listen flag wins).
	Console console.Config `yaml:"console"`
}

// SQLConfig governs `gpupool sql`.
type SQLConfig struct {
	// AllowWrite lets `gpupool sql --write` run statements that change data; without
	// it every query runs read-only (ClickHouse readonly=1).
	AllowWrite bool `yaml:"allow_write"`
}

// DemoConfig configures `gpupool demo`.
type DemoConfig struct {
	// Duration of simulated time.
	Duration time.Duration `yaml:"duration"`
	// Speed is simulated seconds per wall-clock second (1440: a day in a minute).
	Speed float64 `yaml:"speed"`
	// Serve keeps NATS, the store and ingest running after the summary.
	Serve bool `yaml:"serve"`
	// Admission is who admits the simulated fleet's jobs: "scheduler" (the
	// default: gpupool's scheduler, in front of the fleet's clusters as Kueue
	// is in front of kube-scheduler) or "fleet" (the fleet places its own).
	Admission string `yaml:"admission"`
}

// Who admits the demo fleet's jobs (DemoConfig.Admission).
const (
	AdmissionScheduler = "scheduler"
	AdmissionFleet     = "fleet"
)

// Default returns the built-in configuration: everything embedded under
// ./gpupool-data.
func Default() Config {
	c := Config{
		DataDir:   "gpupool-data",
		LogLevel:  "info",
		Bus:       bus.DefaultConfig(),
		Store:     backend.DefaultConfig(),
		Collector: daemon.DefaultConfig(),

		Ingest:    ingest.DefaultConfig(),
		Sim:       sim.DefaultConfig(),
		Demo:      DemoConfig{Duration: 24 * time.Hour, Speed: 1440, Admission: AdmissionScheduler},
		Scheduler: scheduler.DefaultConfig(),
		Reports:   reports.DefaultConfig(),
		Analyzer:  analyzer.DefaultConfig(),
		Alerts:    alerts.DefaultConfig(),
		Auth:      auth.DefaultConfig(),
		Console:   console.DefaultConfig(),
	}
	// The demo's fleet preempts batch work and loses nodes at a real fleet's rate
	// (sim.DemoNodeLossPerNodeDay: a one-day demo mostly loses none), so that its
	// failure rate by reason can show preempted and node_lost beside the
	// program's own.
	c.Sim.NodeLossPerNodeDay, c.Sim.PreemptShare = sim.DemoNodeLossPerNodeDay, sim.DemoPreemptShare
	// Empty paths follow data_dir (see Resolve).
	c.Bus.Embedded.DataDir = ""
	c.Store.CHDB.Path = ""
	return c
}

// IngestDefault is Default for `gpupool ingest`, a process that only writes: the
// embedded engine lean (chdb.Config.Lean; docs/measurements.md#memory). The
// other commands keep the engine's defaults: they query. ingest.go_memory_limit_mib
// is in both; only ingest applies it.
func IngestDefault() Config {
	c := Default()
	c.Store.CHDB = c.Store.CHDB.Lean()
	return c
}

// Load reads path (if not empty) over the defaults, resolves derived paths and
// validates.
func Load(path string) (Config, error) {
	c, err := Read(path)
	if err != nil {
		return c, err
	}
	return c, c.Finish(path)
}

// Read returns the defaults with the file at path (if not empty) over them; the
// caller may set more before Finish.
func Read(path string) (Config, error) { return ReadOver(nil, path) }

// ReadOver returns base (nil: Default) with the file at path (if not empty) over
// it: a command whose defaults differ from Default's (IngestDefault) starts from
// its own, and the file's keys still win.
func ReadOver(base *Config, path string) (Config, error) {
	c := Default()
	if base != nil {
		c = *base
	}
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	if err := Parse(data, &c); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Finish resolves derived settings and validates, naming the file read (path, if
// any) and every failing field on its own line.
func (c *Config) Finish(path string) error {
	c.Resolve()
	if err := c.Validate(); err != nil {
		if path != "" {
			return fmt.Errorf("config %s:\n%w", path, err)
		}
		return fmt.Errorf("config:\n%w", err)
	}
	return nil
}

// Parse decodes YAML into c, refusing unknown keys.
func Parse(data []byte, c *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) { // io.EOF: empty file, defaults stand
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s", strings.Join(te.Errors, "; "))
		}
		return err
	}
	return nil
}

// Resolve fills paths that follow DataDir.
func (c *Config) Resolve() {
	if c.Bus.Embedded.DataDir == "" {
		c.Bus.Embedded.DataDir = filepath.Join(c.DataDir, "nats")
	}
	if c.Store.CHDB.Path == "" {
		c.Store.CHDB.Path = filepath.Join(c.DataDir, "chdb")
	}
	c.Collector.Resolve(c.DataDir)
	if c.Reports.Dir == "" {
		c.Reports.Dir = filepath.Join(c.DataDir, "reports")
	}
	if c.Reports.StateFile == "" {
		c.Reports.StateFile = filepath.Join(c.Reports.Dir, ".schedules.json")
	}
	c.Auth.Resolve(c.DataDir)
}

// Validate checks every section and names the failing field by its path.
func (c Config) Validate() error {
	var errs []error
	field := func(section string, err error) { errs = append(errs, schemas.PrefixFields(section, err)) }
	if c.DataDir == "" {
		errs = append(errs, schemas.Field("data_dir", errors.New("empty")))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, schemas.Fieldf("log_level", "%q is not debug, info, warn or error", c.LogLevel))
	}
	field("bus", c.Bus.Validate())
	field("store", c.Store.Validate())
	field("collector", c.Collector.Validate())
	field("ingest", c.Ingest.Validate())
	simCfg := c.Sim
	if simCfg.Start.IsZero() {
		simCfg.Start = time.Unix(0, 0) // chosen at run time when not configured
	}
	field("sim", simCfg.Validate())
	if c.Demo.Duration < c.Sim.Tick {
		errs = append(errs, schemas.Fieldf("demo.duration", "%s is shorter than one sim.tick (%s)", c.Demo.Duration, c.Sim.Tick))
	}
	if c.Demo.Speed <= 0 {
		errs = append(errs, schemas.Fieldf("demo.speed", "%g must be positive", c.Demo.Speed))
	}
	switch c.Demo.Admission {
	case "", AdmissionScheduler, AdmissionFleet:
	default:
		errs = append(errs, schemas.Fieldf("demo.admission", "%q is not %s or %s", c.Demo.Admission, AdmissionScheduler, AdmissionFleet))
	}
	field("scheduler", c.Scheduler.Validate())
	field("reports", c.Reports.Validate())
	field("analyzer", c.Analyzer.Validate())
	field("alerts", c.Alerts.Validate())
	field("auth", c.Auth.Validate())
	field("console", c.Console.Validate())
	return errors.Join(errs...)
}

// QuietLevel is LogLevel for a command that prints a report: def when LogLevel is
// info (the default), so that stderr keeps to warnings; LogLevel otherwise.
func (c Config) QuietLevel(def slog.Level) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil || l == slog.LevelInfo {
		return def
	}
	return l
}
