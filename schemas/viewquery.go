package schemas

import (
	"fmt"
	"regexp"
	"strings"
)

// viewDefinition matches a statement that sets a materialized view's query: its
// creation (… AS SELECT …) or a later ALTER TABLE … MODIFY QUERY SELECT ….
var viewDefinition = regexp.MustCompile(`(?s)^(?:CREATE MATERIALIZED VIEW IF NOT EXISTS|ALTER TABLE) [A-Za-z0-9_]+\.([A-Za-z0-9_]+)\b.*?(?:\bAS|\bMODIFY QUERY)\s+(SELECT\b.*)$`)

// ViewQuery returns the SELECT of the materialized view named view as the
// migrations last defined it, rendered for p, whether or not a later migration
// dropped the view. The rollups ingest now writes itself (migrations 0020, 0021)
// are this query's result over the raw samples: it rebuilds them for samples that
// reached the raw tables another way (a backfill), and tests compare ingest's
// rows with it.
func ViewQuery(p MigrationParams, view string) (string, error) {
	ms, err := Migrations(p)
	if err != nil {
		return "", err
	}
	q := ""
	for _, m := range ms {
		for _, s := range m.Statements {
			g := viewDefinition.FindStringSubmatch(strings.TrimSpace(s))
			if g != nil && g[1] == view {
				q = g[2]
			}
		}
	}
	if q == "" {
		return "", fmt.Errorf("schemas: no migration defines a materialized view %q", view)
	}
	return q, nil
}
