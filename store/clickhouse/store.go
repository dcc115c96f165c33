package clickhouse

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/secure/redact"
	"github.com/gpupool/gpupool/store"
)

// Store is the ClickHouse server backend of store.Store. It is safe for concurrent
// use: clickhouse-go pools connections (Config.MaxOpenConns).
type Store struct {
	cfg    Config
	log    *slog.Logger
	conn   driver.Conn
	closed atomic.Bool
	// slice, when set, replaces insertSliceRows (tests send small blocks in slices).
	slice int
}

var _ store.Store = (*Store)(nil)

// Option changes how Open connects.
type Option func(*options)

type options struct{ log *slog.Logger }

// WithLogger sets the store's logger (default: discarded; nil keeps it).
func WithLogger(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}

// Open connects to the server, checks that it answers and creates cfg.Database
// (ON CLUSTER cfg.Cluster when set) if it is missing. Unqualified table names in
// statements then refer to cfg.Database, as with the embedded store.
func Open(ctx context.Context, cfg Config, with ...Option) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("clickhouse store: %w", err)
	}
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range with {
		opt(&o)
	}
	log := o.log
	opts, err := cfg.options()
	if err != nil {
		return nil, fmt.Errorf("clickhouse store: %w", err)
	}
	// A connection names its database in the handshake, which fails if the
	// database does not exist yet; so the first connection names none.
	boot, err := ch.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("clickhouse store: %w", err)
	}
	err = ping(ctx, boot, cfg)
	if err == nil {
		err = ensureDatabase(ctx, boot, cfg)
	}
	_ = boot.Close()
	if err != nil {
		return nil, err
	}

	opts.Auth.Database = cfg.Database
	conn, err := ch.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("clickhouse store: %w", err)
	}
	if err := ping(ctx, conn, cfg); err != nil {
		_ = conn.Close()
		return nil, err
	}
	s := &Store{cfg: cfg, log: log.With("component", "store", "backend", "clickhouse"), conn: conn}
	version := ""
	if v, err := conn.ServerVersion(); err == nil {
		version = v.Version.String()
	}
	s.log.Info("clickhouse store open", "addr", logAddrs(cfg.Addr), "database", cfg.Database,
		"cluster", cfg.Cluster, "server_version", version)
	return s, nil
}

// logAddrs are the configured addresses as logs and errors show them, any user
// information masked.
func logAddrs(addrs []string) string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = redact.Addr(a)
	}
	return strings.Join(out, ",")
}

// ping checks the server answers, telling apart a server that cannot be reached
// from one that refuses the user.
func ping(ctx context.Context, conn driver.Conn, cfg Config) error {
	err := conn.Ping(ctx)
	if err == nil {
		return nil
	}
	addr := logAddrs(cfg.Addr)
	var ex *ch.Exception
	if errors.As(err, &ex) {
		switch ex.Code {
		case 516, 192, 193, 194: // AUTHENTICATION_FAILED, UNKNOWN_USER, WRONG_PASSWORD, REQUIRED_PASSWORD
			user := cfg.Username
			if user == "" {
				user = "default"
			}
			return fmt.Errorf("clickhouse: connect to %s as %s: %w (check the username and password)", addr, user, err)
		}
		return fmt.Errorf("clickhouse: ping %s: %w", addr, err)
	}
	hint := "is the server running? set --clickhouse-addr"
	var netErr net.Error
	var recErr tls.RecordHeaderError
	if cfg.TLS && errors.As(err, &recErr) {
		hint = "the server does not speak TLS on this port: set tls: false, or use its TLS port (usually 9440)"
	} else if !cfg.TLS && !errors.As(err, &netErr) && ctx.Err() == nil {
		// Something answered, but not in the native protocol: often a TLS port
		// spoken to in plain text, or the HTTP port.
		hint = "something answered, but not in ClickHouse's native protocol: for a TLS port set tls: true; " +
			"the native port is 9000 (9440 with TLS), not HTTP's 8123; set --clickhouse-addr"
	}
	return fmt.Errorf("clickhouse: ping %s: %w (%s)", addr, err, hint)
}

// ensureDatabase creates the database unless it exists. It asks first so that a
// user allowed to use the database but not to create databases can still connect.
func ensureDatabase(ctx context.Context, conn driver.Conn, cfg Config) error {
	var n uint64
	err := conn.QueryRow(ch.Context(ctx, ch.WithParameters(ch.Parameters{"db": cfg.Database})),
		"SELECT count() FROM system.databases WHERE name = {db:String}").Scan(&n)
	if err != nil {
		return fmt.Errorf("clickhouse: look up database %s: %w", cfg.Database, err)
	}
	if n > 0 {
		return nil
	}
	p := schemas.MigrationParams{DB: cfg.Database, Cluster: cfg.Cluster}
	q := strings.TrimSpace(fmt.Sprintf("CREATE DATABASE IF NOT EXISTS %s %s", schemas.QuoteIdent(cfg.Database), p.OnCluster()))
	if err := conn.Exec(ctx, q); err != nil {
		return fmt.Errorf("clickhouse: create database %s: %w", cfg.Database, err)
	}
	return nil
}

// Database returns the database holding gpupool's tables.
func (s *Store) Database() string { return s.cfg.Database }

// Cluster returns the ClickHouse cluster DDL runs on, or "" for a single server;
// pass it to store.Migrate in schemas.MigrationParams.
func (s *Store) Cluster() string { return s.cfg.Cluster }

func (s *Store) check() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// queryContext binds params as server-side query parameters: the server parses
// each value as its placeholder's type, so values never become SQL text. Dates
// without a time zone of their own are read as UTC dates, as JSON output has them.
func (s *Store) queryContext(ctx context.Context, params store.Params) context.Context {
	opts := []ch.QueryOption{ch.WithUserLocation(time.UTC)}
	if s.cfg.ReadOnly {
		// readonly=1 makes the server refuse anything but reads for this query.
		opts = append(opts, ch.WithSettings(ch.Settings{"readonly": 1}))
	}
	if len(params) > 0 {
		opts = append(opts, ch.WithParameters(ch.Parameters(params)))
	}
	return ch.Context(ctx, opts...)
}

// Exec runs a statement that returns no rows.
func (s *Store) Exec(ctx context.Context, sql string, params store.Params) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := s.conn.Exec(s.queryContext(ctx, store.BindParams(sql, params)), sql); err != nil {
		return fmt.Errorf("exec %s: %w", store.Abbreviate(sql), err)
	}
	return nil
}

// Query runs a statement and returns all its rows, normalised to the value kinds
// store.Result documents.
func (s *Store) Query(ctx context.Context, sql string, params store.Params) (*store.Result, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.conn.Query(s.queryContext(ctx, store.BindParams(sql, params)), sql)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", store.Abbreviate(sql), err)
	}
	defer rows.Close()
	res, err := readRows(rows)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", store.Abbreviate(sql), err)
	}
	return res, nil
}

// readRows reads every row, scanning each cell into a fresh value of its column's
// scan type (a pointer for Nullable, so NULL is nil) and normalising it.
func readRows(rows driver.Rows) (*store.Result, error) {
	cts := rows.ColumnTypes()
	res := &store.Result{Columns: make([]store.ColumnMeta, len(cts))}
	for i, ct := range cts {
		res.Columns[i] = store.ColumnMeta{Name: ct.Name(), Type: ct.DatabaseTypeName()}
	}
	dests := make([]any, len(cts))
	for rows.Next() {
		for i, ct := range cts {
			dests[i] = scanDest(ct.ScanType())
		}
		if err := rows.Scan(dests...); err != nil {
			return nil, fmt.Errorf("row %d: %w", len(res.Rows)+1, err)
		}
		row := make([]any, len(dests))
		for i, d := range dests {
			row[i] = scanned(d)
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// insertSliceRows is how many rows of a block Insert hands clickhouse-go at a
// time: each slice is built into clickhouse-go's columns, encoded, compressed and
// sent as one Native block of the same INSERT, so the client holds one slice, not
// a whole batch (half a million rows) three times over. The number is fixed, so an
// insert retried with the same token sends the same blocks and the server, which
// deduplicates block by block, drops every one it stored before. The server
// names each block by the token and the client blocks it came from, so the same
// rows sent in other slices (a build before 82e0c03 sent each block whole) are a
// new insert: a batch stored but not yet acknowledged when ingest restarts on a
// build with another slicing would be stored twice.
const insertSliceRows = 65536

// Insert writes b into table in the Native format, converting each column to the
// table's type (see columnValues), and refuses a column whose type does not fit
// the table's (store.CheckInsertType) before sending any row. A non-empty token
// makes the insert idempotent.
//
// The rows go in slices of insertSliceRows (one INSERT). If anything fails after
// the first slice is sent, the connection is dropped without ending the INSERT:
// the server then cancels it, and never stores a short insert whose blocks a
// retry's would not match.
func (s *Store) Insert(ctx context.Context, table string, b *store.Block, token string) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := b.Check(); err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	n := b.Rows()
	if n == 0 {
		return nil
	}
	ictx := ch.Context(ctx, ch.WithSettings(insertSettings(token, s.cfg.AsyncInsert, s.cfg.Cluster != "")))
	batch, err := s.conn.PrepareBatch(ictx, store.InsertStatement(s.cfg.Database, table, b.ColumnNames()))
	if err != nil {
		return fmt.Errorf("insert %d rows into %s: %w", n, table, err)
	}
	sent := false
	// Abort closes the connection without ending the INSERT (after Send it does
	// nothing); Close would end it, storing the slices already sent.
	defer func() {
		if !sent {
			_ = batch.Abort()
		}
	}()
	targets, err := checkTargets(b, batch.Columns())
	if err != nil {
		return fmt.Errorf("insert %d rows into %s: %w", n, table, err)
	}
	for from := 0; from < n; from += s.sliceRows() {
		to := min(from+s.sliceRows(), n)
		if err := appendRows(batch, b, targets, from, to); err != nil {
			return fmt.Errorf("insert %d rows into %s: %w", n, table, err)
		}
		if to == n {
			break
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("insert %d rows into %s: %w", n, table, err)
		}
		if err := batch.Flush(); err != nil {
			return fmt.Errorf("insert %d rows into %s: rows %d to %d: %w", n, table, from+1, to, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert %d rows into %s: %w", n, table, err)
	}
	sent = true
	return nil
}

func (s *Store) sliceRows() int {
	if s.slice > 0 {
		return s.slice
	}
	return insertSliceRows
}

// checkTargets returns the table's column types for b's columns, or an error if
// their number differs or a column does not fit its target (store.CheckInsertType).
func checkTargets(b *store.Block, cols []column.Interface) ([]string, error) {
	if len(cols) != len(b.Columns) {
		return nil, fmt.Errorf("server expects %d columns for %d sent", len(cols), len(b.Columns))
	}
	targets := make([]string, len(cols))
	for i, c := range b.Columns {
		targets[i] = string(cols[i].Type())
		if err := store.CheckInsertType(c, targets[i]); err != nil {
			return nil, err
		}
	}
	return targets, nil
}

// appendRows appends rows [from, to) of b to batch. A LowCardinality column goes
// in row by row from its dictionary, never as a []string of every row.
func appendRows(batch driver.Batch, b *store.Block, targets []string, from, to int) error {
	for i, c := range b.Columns {
		bc := batch.Column(i)
		var err error
		if lc, ok := c.(*store.LowCardinalityStringCol); ok {
			for r := from; r < to && err == nil; r++ {
				err = bc.AppendRow(lc.KeyAt(r))
			}
		} else {
			var v any
			if v, err = rowValues(c, targets[i], from, to); err == nil {
				err = bc.Append(v)
			}
		}
		if err != nil {
			return fmt.Errorf("column %s (%s into %s): %w", c.Name(), c.Type(), targets[i], err)
		}
	}
	return nil
}

// Close closes the connection pool; later calls return store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if err := s.conn.Close(); err != nil {
		return fmt.Errorf("clickhouse store: close: %w", err)
	}
	return nil
}
