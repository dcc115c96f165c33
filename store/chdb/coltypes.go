package chdb

import (
	"fmt"
	"strings"
	"sync"

	"github.com/gpupool/gpupool/store"
)

// The engine casts each column of a Native block to its table column's type,
// narrowing included (a UInt32 70000 lands in a UInt16 column as 4464, with no
// error). So Insert checks each column's type against the table's first
// (store.CheckInsertType), as clickhouse-go does for the server store, and
// refuses the block before any row is written.
//
// tableTypes caches each table's column types, by database and table, for the
// process's engine (every Store of the process shares it): a statement that may
// change a table (any Exec, any Query but a read) empties it, and so does a
// failed insert.
var tableTypes = struct {
	mu sync.Mutex
	m  map[[2]string]map[string]string
	// gen counts the emptyings: types looked up across one are not kept.
	gen uint64
}{m: map[[2]string]map[string]string{}}

// forgetTableTypes empties the cache.
func forgetTableTypes() {
	tableTypes.mu.Lock()
	clear(tableTypes.m)
	tableTypes.gen++
	tableTypes.mu.Unlock()
}

// forgetTableTypesUnlessRead empties the cache unless sql starts with a
// statement that only reads.
func forgetTableTypesUnlessRead(sql string) {
	word, _, _ := strings.Cut(strings.TrimLeft(sql, " \t\r\n("), " ")
	switch strings.ToUpper(strings.TrimRight(word, "\t\r\n(")) {
	case "SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXISTS", "EXPLAIN":
		return
	}
	forgetTableTypes()
}

// checkBlockTypes refuses b unless each of its columns fits table's column of
// the same name (store.CheckInsertType). A column the table lacks, or a table
// that does not exist, is left to the engine's own error.
func (c *conn) checkBlockTypes(db, table string, b *store.Block) error {
	types, err := c.tableTypes(db, table)
	if err != nil {
		return err
	}
	for _, col := range b.Columns {
		target, ok := types[col.Name()]
		if !ok {
			continue
		}
		if err := store.CheckInsertType(col, target); err != nil {
			return err
		}
	}
	return nil
}

// tableTypes returns table's column types, by name, from the cache or the
// engine's system.columns.
func (c *conn) tableTypes(db, table string) (map[string]string, error) {
	key := [2]string{db, table}
	tableTypes.mu.Lock()
	types, ok := tableTypes.m[key]
	gen := tableTypes.gen
	tableTypes.mu.Unlock()
	if ok {
		return types, nil
	}
	const q = "SELECT name, type FROM system.columns WHERE database = {db:String} AND table = {table:String}"
	raw, err := c.query(q, "JSONCompact", map[string]string{"db": db, "table": table})
	if err != nil {
		return nil, fmt.Errorf("look up the column types of %s.%s: %w", db, table, err)
	}
	res, err := store.ParseJSONCompact(raw.Data)
	if err != nil {
		return nil, fmt.Errorf("look up the column types of %s.%s: %w", db, table, err)
	}
	types = make(map[string]string, len(res.Rows))
	for i := range res.Rows {
		name, _ := res.String(i, "name")
		typ, _ := res.String(i, "type")
		types[name] = typ
	}
	if len(types) > 0 { // a table not there yet may be created by the next Exec
		tableTypes.mu.Lock()
		if tableTypes.gen == gen {
			tableTypes.m[key] = types
		}
		tableTypes.mu.Unlock()
	}
	return types, nil
}
