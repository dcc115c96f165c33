package store

import (
	"strings"

	"github.com/gpupool/gpupool/schemas"
)

// InsertStatement returns "INSERT INTO `db`.`table` (`c1`, `c2`, …)" for a block's
// columns, without FORMAT or data (each backend sends those its own way). Names come
// from code, never from users, and are quoted all the same.
func InsertStatement(db, table string, cols []string) string {
	var sb strings.Builder
	sb.WriteString("INSERT INTO ")
	sb.WriteString(schemas.QuoteIdent(db))
	sb.WriteByte('.')
	sb.WriteString(schemas.QuoteIdent(table))
	sb.WriteString(" (")
	for i, c := range cols {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(schemas.QuoteIdent(c))
	}
	sb.WriteString(")")
	return sb.String()
}

// Abbreviate shortens SQL to one line of at most 80 characters, for error messages.
func Abbreviate(sql string) string {
	sql = strings.Join(strings.Fields(sql), " ")
	if len(sql) > 80 {
		return sql[:77] + "..."
	}
	return sql
}

// ArrayParam is an Array(String) query parameter: a ClickHouse array literal,
// which the server parses as a value (never as SQL).
func ArrayParam(ss []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\'')
		b.WriteString(strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s))
		b.WriteByte('\'')
	}
	b.WriteByte(']')
	return b.String()
}
