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
type Migration struct {
	Version    int
	Name       string
	Statements []string
	// Checksum identifies the migration's source text; a migration that was applied
	// with another checksum has been edited after release.
	Checksum string
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
		out = append(out, Migration{
			Version:    version,
			Name:       name,
			Statements: SplitStatements(buf.String()),
			Checksum:   hex.EncodeToString(sum[:8]),
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
