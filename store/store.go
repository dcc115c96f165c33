package store

import "context"

// Params are values for server-side query parameters: a placeholder {name:Type} in
// the SQL text is bound to Params["name"], which ClickHouse parses as Type. Values
// never become SQL text, so they cannot inject SQL. A string placeholder's value is
// the string itself, backslashes, tabs and newlines included (the backends escape
// it with BindParams).
type Params map[string]string

// Store is a ClickHouse database, embedded or remote.
type Store interface {
	// Exec runs a statement that returns no rows (DDL, INSERT … SELECT, OPTIMIZE).
	Exec(ctx context.Context, sql string, params Params) error
	// Query runs a statement and returns all its rows.
	Query(ctx context.Context, sql string, params Params) (*Result, error)
	// Insert writes b into table (in the store's database). A non-empty token makes
	// the insert idempotent: a second insert with the same token and data is dropped
	// by ClickHouse's insert deduplication.
	Insert(ctx context.Context, table string, b *Block, token string) error
	// Database returns the name of the database that holds gpupool's tables.
	Database() string
	// Close releases the store's connections.
	Close() error
}
