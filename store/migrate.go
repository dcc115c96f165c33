package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// MigrationReport says what Migrate did.
type MigrationReport struct {
	// Applied lists the versions run now; Skipped those found applied before.
	Applied []int
	Skipped []int
	// Views lists the views (re)created now, in the order they were: none when
	// their definitions were applied before and no migration ran.
	Views []string
}

// viewsVersion is the schema_migrations row of the repeatable views
// (schemas.Views): its checksum is that of the whole set as last applied, as
// Flyway records a repeatable migration beside the versioned ones. No versioned
// migration has version 0.
const viewsVersion = 0

// Migrate brings the store's database up to the newest schema: it runs every
// migration not yet recorded in schema_migrations, in order, and records it; then,
// when a migration ran or the views' checksum differs from the one recorded, it
// re-creates every view (CREATE OR REPLACE, in dependency order) and records their
// checksum. Every statement is idempotent, so a migration interrupted half-way is
// simply run again. A recorded migration whose checksum differs from the embedded
// one (and from the one it was released with) is an error: a released migration
// was edited, and the database may not match the code.
//
// A schema already up to date is only read, never touched: the services' own
// ClickHouse users (store/grants) may read schema_migrations but create nothing, so
// that an administrator runs `gpupool migrate` and each service starts on the
// least privilege it needs.
func Migrate(ctx context.Context, s Store, p schemas.MigrationParams) (*MigrationReport, error) {
	p.DB = s.Database()
	ms, err := schemas.Migrations(p)
	if err != nil {
		return nil, err
	}
	vs, err := schemas.Views(p)
	if err != nil {
		return nil, err
	}
	viewsSum := schemas.ViewsChecksum(vs)
	db := schemas.QuoteIdent(p.DB)
	if applied, err := readApplied(ctx, s, db); err == nil {
		if rep, pending, err := compareApplied(ms, applied); err != nil || (!pending && applied[viewsVersion] == viewsSum) {
			return rep, err
		}
	}
	boot := []string{
		fmt.Sprintf("CREATE DATABASE IF NOT EXISTS %s %s", db, p.OnCluster()),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s.schema_migrations %s
(
    version    UInt32,
    name       String,
    checksum   String,
    applied_at DateTime64(3, 'UTC')
)
ENGINE = %s
ORDER BY version`, db, p.OnCluster(), p.Engine("ReplacingMergeTree", "applied_at")),
	}
	for _, q := range boot {
		if err := s.Exec(ctx, q, nil); err != nil {
			return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
		}
	}
	applied, err := readApplied(ctx, s, db)
	if err != nil {
		return nil, err
	}
	if _, _, err := compareApplied(ms, applied); err != nil {
		return &MigrationReport{}, err
	}
	rep, err := applyMigrations(ctx, s, db, ms, applied)
	if err != nil || (len(rep.Applied) == 0 && applied[viewsVersion] == viewsSum) {
		return rep, err
	}
	for _, v := range vs {
		if err := s.Exec(ctx, v.Statement, nil); err != nil {
			return rep, fmt.Errorf("migrate: view %s (schemas/views/%s.sql): %w", v.Name, v.Name, err)
		}
		rep.Views = append(rep.Views, v.Name)
	}
	if err := record(ctx, s, db, viewsVersion, "views", viewsSum); err != nil {
		return rep, fmt.Errorf("migrate: record views: %w", err)
	}
	return rep, nil
}

// applyMigrations runs and records every migration applied does not hold.
func applyMigrations(ctx context.Context, s Store, db string, ms []schemas.Migration, applied map[int]string) (*MigrationReport, error) {
	rep := &MigrationReport{}
	for _, m := range ms {
		if _, ok := applied[m.Version]; ok {
			rep.Skipped = append(rep.Skipped, m.Version)
			continue
		}
		for i, q := range m.Statements {
			if err := s.Exec(ctx, q, nil); err != nil {
				return rep, fmt.Errorf("migrate: migration %04d_%s statement %d: %w", m.Version, m.Name, i+1, err)
			}
		}
		if err := record(ctx, s, db, m.Version, m.Name, m.Checksum); err != nil {
			return rep, fmt.Errorf("migrate: record migration %04d: %w", m.Version, err)
		}
		rep.Applied = append(rep.Applied, m.Version)
	}
	return rep, nil
}

// record writes a row of schema_migrations.
func record(ctx context.Context, s Store, db string, version int, name, checksum string) error {
	return s.Exec(ctx, fmt.Sprintf("INSERT INTO %s.schema_migrations (version, name, checksum, applied_at) VALUES ({v:UInt32}, {n:String}, {c:String}, {t:DateTime64(3, 'UTC')})", db),
		Params{"v": strconv.Itoa(version), "n": name, "c": checksum, "t": time.Now().UTC().Format("2006-01-02 15:04:05.000")})
}

// readApplied returns the checksum of every migration schema_migrations records.
func readApplied(ctx context.Context, s Store, db string) (map[int]string, error) {
	res, err := s.Query(ctx, fmt.Sprintf("SELECT version, argMax(checksum, applied_at) AS checksum FROM %s.schema_migrations GROUP BY version", db), nil)
	if err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	applied := map[int]string{}
	rows := Read(res, "schema_migrations")
	for rows.Next() {
		applied[int(rows.Int("version"))] = rows.Str("checksum")
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	return applied, nil
}

// compareApplied checks the recorded checksums against the embedded migrations and
// says whether any is still to run; the report lists them all as skipped when none is.
func compareApplied(ms []schemas.Migration, applied map[int]string) (rep *MigrationReport, pending bool, err error) {
	rep = &MigrationReport{}
	for _, m := range ms {
		sum, ok := applied[m.Version]
		switch {
		case !ok:
			pending = true
		case sum != m.Checksum && (m.Released == "" || sum != m.Released):
			return rep, false, fmt.Errorf("migrate: migration %04d_%s was applied with checksum %s but the binary's is %s: a released migration was edited; restore it and add a new migration instead", m.Version, m.Name, sum, m.Checksum)
		default:
			rep.Skipped = append(rep.Skipped, m.Version)
		}
	}
	return rep, pending, nil
}
