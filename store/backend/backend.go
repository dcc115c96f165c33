package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/clickhouse"
)

// Backends Config.Backend may name.
const (
	// CHDB is the embedded ClickHouse engine, data in Config.CHDB.Path.
	CHDB = "chdb"
	// ClickHouse is a server or cluster reached over the native protocol.
	ClickHouse = "clickhouse"
)

// ErrNoDatabase is returned by OpenExisting when the embedded database has not been
// created yet.
var ErrNoDatabase = errors.New("no embedded database")

// Config is the store section of the configuration file.
type Config struct {
	// Backend is "chdb" (embedded) or "clickhouse" (a server or cluster).
	Backend string `yaml:"backend"`
	// RawTTLDays is how long raw samples are kept.
	RawTTLDays int               `yaml:"raw_ttl_days"`
	CHDB       chdb.Config       `yaml:"chdb"`
	ClickHouse clickhouse.Config `yaml:"clickhouse"`
}

// DefaultConfig returns the embedded backend with 90 days of raw samples.
func DefaultConfig() Config {
	return Config{Backend: CHDB, RawTTLDays: 90, CHDB: chdb.DefaultConfig(), ClickHouse: clickhouse.DefaultConfig()}
}

// Validate checks the backend in use; each error names its field.
func (c Config) Validate() error {
	var errs []error
	switch c.Backend {
	case CHDB:
		errs = append(errs, schemas.PrefixFields("chdb", c.CHDB.Validate()))
	case ClickHouse:
		errs = append(errs, schemas.PrefixFields("clickhouse", c.ClickHouse.Validate()))
	default:
		errs = append(errs, schemas.Fieldf("backend", "%q is not chdb or clickhouse", c.Backend))
	}
	if c.RawTTLDays < 1 {
		errs = append(errs, schemas.Fieldf("raw_ttl_days", "%d must be at least 1", c.RawTTLDays))
	}
	return errors.Join(errs...)
}

// MigrationParams renders the migrations for the configured database, cluster and
// raw-sample TTL.
func (c Config) MigrationParams() schemas.MigrationParams {
	p := schemas.MigrationParams{RawTTLDays: c.RawTTLDays}
	if c.Backend == ClickHouse {
		p.DB, p.Cluster = c.ClickHouse.Database, c.ClickHouse.Cluster
	} else {
		p.DB = c.CHDB.Database
	}
	return p
}

// Open opens the configured store; readOnly opens connections that refuse writes.
func Open(ctx context.Context, c Config, log *slog.Logger, readOnly bool) (store.Store, error) {
	// Return a nil interface on error, never a typed nil pointer inside one.
	switch c.Backend {
	case CHDB:
		cfg := c.CHDB
		cfg.ReadOnly = readOnly
		s, err := chdb.Open(cfg, chdb.WithLogger(log))
		if err != nil {
			return nil, err
		}
		return s, nil
	case ClickHouse:
		cfg := c.ClickHouse
		cfg.ReadOnly = cfg.ReadOnly || readOnly
		s, err := clickhouse.Open(ctx, cfg, clickhouse.WithLogger(log))
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("store.backend: %q is not chdb or clickhouse", c.Backend)
}

// OpenExisting opens the store read-only (or for writing) for a command that reads
// what others wrote: an embedded database that does not exist yet is
// ErrNoDatabase, with what to do, rather than a new empty one.
func OpenExisting(ctx context.Context, c Config, log *slog.Logger, readOnly bool) (store.Store, error) {
	if c.Backend == CHDB {
		if _, err := os.Stat(c.CHDB.Path); err != nil {
			return nil, fmt.Errorf("%w at %s (run \"gpupool demo\" first, or pass --data-dir)", ErrNoDatabase, c.CHDB.Path)
		}
	}
	return Open(ctx, c, log, readOnly)
}

// OpenMigrated opens the store for writing and brings its schema up to date: what
// every command that writes starts with.
func OpenMigrated(ctx context.Context, c Config, log *slog.Logger) (store.Store, error) {
	s, err := Open(ctx, c, log, false)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, s, c, log); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Migrate applies the schema migrations to s and logs what it did.
func Migrate(ctx context.Context, s store.Store, c Config, log *slog.Logger) error {
	rep, err := store.Migrate(ctx, s, c.MigrationParams())
	if err != nil {
		return err
	}
	if log != nil {
		log.Info("schema up to date", "database", s.Database(), "applied", rep.Applied, "already", len(rep.Skipped), "views_applied", len(rep.Views))
	}
	return nil
}
