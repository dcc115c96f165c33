package schemas

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// MigrationParams fill the placeholders of the migration templates.
type MigrationParams struct {
	// DB is the database that holds gpupool's tables.
	DB string
	// Cluster, when set, makes DDL run ON CLUSTER on every server of that
	// ClickHouse cluster.
	Cluster string
	// RawTTLDays is how long raw samples are kept.
	RawTTLDays int
}

// OnCluster returns the ON CLUSTER clause for DDL, or "" on a single server.
func (p MigrationParams) OnCluster() string {
	if p.Cluster == "" {
		return ""
	}
	return "ON CLUSTER " + QuoteIdent(p.Cluster)
}

// Local names the table that stores rows: the table itself on a single server; on a
// cluster, <table>_local on every server, with a Distributed table named <table>
// over them (see Distributed).
func (p MigrationParams) Local(table string) string {
	if p.Cluster == "" {
		return table
	}
	return table + "_local"
}

// Engine returns a MergeTree-family engine: as given on a single server; on a cluster
// its Replicated form, with the replica path built from the {shard} and {replica}
// macros every server of the cluster must define. args are the engine's own
// arguments (ReplacingMergeTree's version column, for example).
func (p MigrationParams) Engine(family string, args ...string) string {
	if p.Cluster == "" {
		return family + "(" + strings.Join(args, ", ") + ")"
	}
	all := append([]string{"'/clickhouse/tables/{shard}/{database}/{table}'", "'{replica}'"}, args...)
	return "Replicated" + family + "(" + strings.Join(all, ", ") + ")"
}

// DedupWindow is the table setting that keeps the last N insert deduplication tokens
// (the replicated or non-replicated form).
func (p MigrationParams) DedupWindow(n int) string {
	if p.Cluster == "" {
		return fmt.Sprintf("non_replicated_deduplication_window = %d", n)
	}
	return fmt.Sprintf("replicated_deduplication_window = %d", n)
}

// Distributed returns, on a cluster, the statement creating the Distributed table
// <table> over <table>_local on every shard, rows spread by shardKey; on a single
// server it returns nothing (the statement is skipped).
func (p MigrationParams) Distributed(table, shardKey string) string {
	if p.Cluster == "" {
		return ""
	}
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s %s AS %s.%s ENGINE = Distributed(%s, %s, %s, %s)",
		p.DB, table, p.OnCluster(), p.DB, p.Local(table), QuoteIdent(p.Cluster), p.DB, p.Local(table), shardKey)
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the parameters are safe to put into DDL.
func (p MigrationParams) Validate() error {
	if !identRe.MatchString(p.DB) {
		return fmt.Errorf("database name %q: want letters, digits and _, not starting with a digit", p.DB)
	}
	if p.Cluster != "" && !identRe.MatchString(p.Cluster) {
		return fmt.Errorf("cluster name %q: want letters, digits and _, not starting with a digit", p.Cluster)
	}
	if p.RawTTLDays <= 0 {
		return fmt.Errorf("raw sample TTL %d days: must be at least 1", p.RawTTLDays)
	}
	return nil
}

// QuoteIdent quotes a ClickHouse identifier with backticks.
func QuoteIdent(s string) string {
	return "`" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "`", "\\`") + "`"
}

// Migration is one versioned schema change: statements to run in order. Each
// statement is idempotent (IF NOT EXISTS), so running a migration twice is harmless.
// A migration whose only statements were views has none left: its version is
// still recorded. Plain views are no migration's: see Views.
type Migration struct {
	Version    int
	Name       string
	Statements []string
	// Checksum identifies the migration's source text; a migration that was applied
	// with another checksum has been edited after release.
	Checksum string
	// Released, when set, is the checksum the migration had when it was released,
	// before its view statements moved to views/ (see releasedChecksums): a store
	// that recorded it applied the same tables and data changes.
	Released string
}

// releasedChecksums are the checksums of the migrations whose CREATE VIEW statements
// moved to views/ (one file a view, re-applied on every change: issue 41), as
// released and recorded by the stores that applied them. What is left of those
// migrations is what they did besides the views, unchanged, and the views they
// defined now come from views/ on every migrate, so a store that applied the
// released text and a fresh one end with the same schema (store/chdb's
// TestMigrateViewsFreshEqualsReleased). A migration added from now on defines no
// plain view (TestMigrationsDefineNoView); this list does not grow.
var releasedChecksums = map[int]string{
	2: "7b0c2a49e17867ca", 3: "253f31e8e45ac792", 4: "1e59db5aa52eba4b", 7: "588ead367dfe49ec",
	9: "f33e123de665c3c7", 10: "2c934a1210c1eddf", 11: "acf66e77414a60dc", 12: "0fb9549c517fb508",
	14: "e9a01a5e307e4c82", 15: "b6ecf1527922249f", 17: "766b458d9d945c8a", 18: "c26b6716a93e9e2f",
}

// Migrations returns every migration, in version order, rendered for p.
func Migrations(p MigrationParams) ([]Migration, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	sort.Strings(names)
	out := make([]Migration, 0, len(names))
	for _, path := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(path, "migrations/"), ".sql")
		num, name, ok := strings.Cut(base, "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migrations: file %s: want NNNN_name.sql", path)
		}
		src, err := migrationFS.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		tmpl, err := template.New(base).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("migrations: parse %s: %w", path, err)
		}
		var buf bytes.Buffer
		if err := tmpl.Execute(&buf, p); err != nil {
			return nil, fmt.Errorf("migrations: render %s: %w", path, err)
		}
		sum := sha256.Sum256(src)
		var stmts []string
		for _, q := range SplitStatements(buf.String()) {
			if strings.TrimSpace(q) != "" {
				stmts = append(stmts, q)
			}
		}
		out = append(out, Migration{
			Version:    version,
			Name:       name,
			Statements: stmts,
			Checksum:   hex.EncodeToString(sum[:8]),
			Released:   releasedChecksums[version],
		})
	}
	return out, nil
}

// SplitStatements splits SQL text into statements at lines ending with ";",
// dropping comment-only lines.
func SplitStatements(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if rest := strings.TrimSpace(cur.String()); rest != "" {
		out = append(out, rest)
	}
	return out
}
