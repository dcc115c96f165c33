package chdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/secure/fileperm"
	"github.com/gpupool/gpupool/store"
)

// Config configures the embedded store.
type Config struct {
	// Path is the data directory; it survives restarts.
	Path string `yaml:"path"`
	// LibPath is libchdb.so; empty means DefaultLibPath().
	LibPath string `yaml:"lib_path"`
	// Database holds gpupool's tables. Tests isolate themselves with their own
	// database, not their own Path (see Open).
	Database string `yaml:"database"`
	// Conns is the number of engine connections: statements on different
	// connections run in parallel (an insert and a query, for example).
	Conns int `yaml:"conns"`
	// ReadOnly opens connections that refuse writes and setting changes
	// (ClickHouse readonly=1, introspection functions off). It does not stop
	// file(), INTO OUTFILE or KILL: run users' SQL through store.QueryReadOnly.
	ReadOnly bool `yaml:"read_only"`
	// MemoryLimitMiB and MarkCacheMiB are the engine's, one per process: the
	// first Store a process opens sets them (MaxThreads is per connection).
	//
	// MemoryLimitMiB caps the engine's memory (max_server_memory_usage): a
	// statement that would pass it fails instead of growing the process. 0 leaves
	// the engine's default, 90 % of the machine's memory.
	MemoryLimitMiB int `yaml:"memory_limit_mib"`
	// MarkCacheMiB sizes the engine's caches of marks and primary indexes
	// (mark_cache_size, index_mark_cache_size, primary_index_cache_size); 0 leaves
	// the engine's defaults (5 GiB each, filled as tables are read).
	MarkCacheMiB int `yaml:"mark_cache_mib"`
	// MaxThreads is the threads one statement may use (max_threads); 0: one per
	// core. Fewer threads hold fewer buffers at once.
	MaxThreads int `yaml:"max_threads"`
	// Arenas is the number of memory arenas of the engine's allocator (jemalloc's
	// narenas, with per-CPU arenas off), one per process like MemoryLimitMiB; 0:
	// the engine's default, one per CPU. Each arena keeps the pages its threads
	// freed for reuse, so fewer arenas hold less memory a writer no longer
	// needs (one: about 50 MiB less at ingest's peak, at the same rate;
	// docs/measurements.md). It is passed to the engine as JE_MALLOC_CONF, before
	// the library loads, unless that variable is already set.
	Arenas int `yaml:"arenas"`
	// MergeThreads is the engine's background merge threads, one merge each
	// (background_pool_size, background_merges_mutations_concurrency_ratio 1),
	// one per process like MemoryLimitMiB; 0: the engine's default (16 threads,
	// two merges each). Each running merge holds its blocks: one merge at a time
	// held 19–48 MiB less at ingest's peak, at the same rate, and kept up with a
	// 1 M rows/s drain of 10 million rows (at most 14–15 active parts in
	// process_samples, as with the default; docs/measurements.md).
	MergeThreads int `yaml:"merge_threads"`
	// ReleaseStartupCode hands the pages of the engine's code back to the kernel
	// once the store is open (Linux, MADV_PAGEOUT), one per process like Arenas:
	// the engine touches most of its 566 MB library while it starts and a writer
	// runs little of it again, so about 85 MiB less stays resident; the code it
	// runs faults back in from the file (docs/measurements.md). The process's
	// own executable is released with it (its packages' initialisation runs
	// once: a lean ingest keeps 6 MiB of it instead of 17). On by default.
	ReleaseStartupCode bool `yaml:"release_startup_code"`
	// ReleaseCodeEvery, with ReleaseStartupCode, releases the engine's code
	// pages again while the store writes: after its 2nd, 8th and 32nd insert
	// (each table's first inserts and merges run code steady writing does not
	// run again), then at most once per ReleaseCodeEvery, in the background. The
	// code then faults back one page at a time (no read-ahead, the library's
	// unmapped cached pages dropped), so only what the writer keeps running
	// comes back: about 50 MiB of code instead of 115, each release costing the
	// reads of those pages (docs/measurements.md). One per process, like
	// Arenas; 0 releases only at open. LeanConfig: 10 minutes.
	ReleaseCodeEvery time.Duration `yaml:"release_code_every"`
}

// LeanConfig returns DefaultConfig for a process that only writes (gpupool
// ingest, whose defaults these are): small caches (it reads little), two
// threads per statement and a 1 GiB cap on the engine, one allocator arena, one
// merge at a time, one connection, so that a batch's tables are inserted one
// after the other (at once they raised the peak by 15–30 MiB), and the engine's
// code released again as it writes (ReleaseCodeEvery).
// BenchmarkIngestBacklogRSS and bench/peers measure it.
func LeanConfig() Config { return DefaultConfig().Lean() }

// Lean returns c with LeanConfig's engine settings, its path, library, database
// and read-only setting kept: the defaults `gpupool ingest` starts from before
// the configuration file is read over them.
func (c Config) Lean() Config {
	c.MemoryLimitMiB, c.MarkCacheMiB, c.MaxThreads, c.Arenas, c.MergeThreads, c.Conns = 1024, 64, 2, 1, 1, 1
	c.ReleaseStartupCode, c.ReleaseCodeEvery = true, 10*time.Minute
	return c
}

// allocatorEnv is the variable that configures the engine's allocator (jemalloc,
// built into libchdb.so with the je_ prefix, reads it when the library loads),
// and allocatorConf its value for c ("" for the engine's defaults).
const allocatorEnv = "JE_MALLOC_CONF"

func (c Config) allocatorConf() string {
	if c.Arenas == 0 {
		return ""
	}
	return fmt.Sprintf("narenas:%d,percpu_arena:disabled", c.Arenas)
}

// setAllocatorEnv sets allocatorEnv for cfg before the library's first load,
// unless the operator set it: the allocator reads it once, so a process's
// first Store decides, as for the engine's other per-process settings.
func setAllocatorEnv(cfg Config, log *slog.Logger) error {
	conf := cfg.allocatorConf()
	if conf == "" || libLoaded() {
		return nil
	}
	if v, ok := os.LookupEnv(allocatorEnv); ok {
		log.Info("embedded store: allocator settings from the environment", "env", allocatorEnv, "value", v, "ignored", conf)
		return nil
	}
	if err := os.Setenv(allocatorEnv, conf); err != nil {
		return fmt.Errorf("embedded store: set %s: %w", allocatorEnv, err)
	}
	return nil
}

// engineArgs are the engine settings cfg asks for, as chDB command-line options.
func (c Config) engineArgs() []string {
	var args []string
	if c.MemoryLimitMiB > 0 {
		args = append(args, fmt.Sprintf("--max_server_memory_usage=%d", int64(c.MemoryLimitMiB)<<20))
	}
	if c.MarkCacheMiB > 0 {
		n := int64(c.MarkCacheMiB) << 20
		args = append(args, fmt.Sprintf("--mark_cache_size=%d", n), fmt.Sprintf("--index_mark_cache_size=%d", n),
			fmt.Sprintf("--primary_index_cache_size=%d", n))
	}
	if c.MaxThreads > 0 {
		args = append(args, fmt.Sprintf("--max_threads=%d", c.MaxThreads))
	}
	if c.MergeThreads > 0 {
		args = append(args, fmt.Sprintf("--background_pool_size=%d", c.MergeThreads),
			"--background_merges_mutations_concurrency_ratio=1")
	}
	return args
}

// DefaultConfig returns the embedded store's defaults.
func DefaultConfig() Config {
	return Config{Path: "gpupool-data/chdb", Database: "gpupool", Conns: 3, ReleaseStartupCode: true}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Path == "" {
		return schemas.Field("path", errors.New("the embedded store needs a data directory"))
	}
	if err := (schemas.MigrationParams{DB: c.Database, RawTTLDays: 1}).Validate(); err != nil {
		return schemas.Fieldf("database", "%w", err)
	}
	if c.Conns < 1 || c.Conns > 64 {
		return schemas.Fieldf("conns", "%d is not within 1..64", c.Conns)
	}
	if c.MemoryLimitMiB != 0 && c.MemoryLimitMiB < 128 {
		return schemas.Fieldf("memory_limit_mib", "%d is below 128 (0 leaves the engine's default)", c.MemoryLimitMiB)
	}
	if c.MarkCacheMiB < 0 || c.MaxThreads < 0 {
		return fmt.Errorf("mark_cache_mib (%d) and max_threads (%d) must not be negative", c.MarkCacheMiB, c.MaxThreads)
	}
	if c.Arenas < 0 || c.Arenas > 1024 {
		return schemas.Fieldf("arenas", "%d is not within 0..1024 (0 leaves the engine's default)", c.Arenas)
	}
	if c.MergeThreads < 0 || c.MergeThreads > 256 {
		return schemas.Fieldf("merge_threads", "%d is not within 0..256 (0 leaves the engine's default)", c.MergeThreads)
	}
	if c.ReleaseCodeEvery < 0 || (c.ReleaseCodeEvery > 0 && c.ReleaseCodeEvery < time.Second) {
		return schemas.Fieldf("release_code_every", "%v is neither 0 (release only at open) nor at least 1s", c.ReleaseCodeEvery)
	}
	if c.ReleaseCodeEvery > 0 && !c.ReleaseStartupCode {
		return schemas.Fieldf("release_code_every", "%v needs release_startup_code", c.ReleaseCodeEvery)
	}
	return nil
}

// engine is the process's one chDB engine. chDB holds one data path per process: a
// connection opened on a second path while the first is open silently attaches to
// the first path's data. So the engine is shared by every Store of the process and
// opening another path while any Store is open is an error.
var engine struct {
	mu   sync.Mutex
	path string
	refs int
	// codeReleased: a Store with ReleaseStartupCode has released the code pages.
	codeReleased bool
	// code releases them again as stores write (the first Store's
	// ReleaseCodeEvery); nil when it asked for none or the first release failed.
	code *codeReleaser
}

// Store is the embedded ClickHouse (chDB) backend of store.Store.
type Store struct {
	cfg    Config
	log    *slog.Logger
	lib    *lib
	pool   chan *conn
	conns  []*conn
	mu     sync.Mutex
	closed bool
	// code, when set, is told of each insert (Config.ReleaseCodeEvery).
	code *codeReleaser
}

var _ store.Store = (*Store)(nil)

// Option changes how Open opens the store.
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

// Open loads libchdb.so (on first use), starts the engine on cfg.Path if this
// process has not, and opens cfg.Conns connections using cfg.Database, creating it.
func Open(cfg Config, opts ...Option) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	log := o.log
	if cfg.LibPath == "" {
		cfg.LibPath = DefaultLibPath()
	}
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("embedded store: data path %s: %w", cfg.Path, err)
	}
	cfg.Path = path
	if err := fileperm.MkdirAll(path, log); err != nil { // 0700: the data is its owner's alone
		return nil, fmt.Errorf("embedded store: create data path: %w", err)
	}
	if err := setAllocatorEnv(cfg, log); err != nil {
		return nil, err
	}
	l, err := load(cfg.LibPath)
	if err != nil {
		return nil, err
	}

	engine.mu.Lock()
	defer engine.mu.Unlock()
	if engine.refs > 0 && engine.path != path {
		return nil, fmt.Errorf("%w: this process already serves %s and cannot open %s too (use another database on the same path)", ErrPathInUse, engine.path, path)
	}
	s := &Store{cfg: cfg, log: log.With("component", "store", "backend", "chdb"), lib: l, pool: make(chan *conn, cfg.Conns)}
	args := []string{
		"--path=" + path,
		"--session_timezone=UTC",
		"--output_format_json_quote_64bit_integers=0",
		"--output_format_json_quote_denormals=1",
		"--output_format_json_quote_decimals=0",
	}
	args = append(args, cfg.engineArgs()...)
	if engine.refs == 0 {
		if h, ok := heldByOther(path); ok {
			return nil, h // before the engine prints its own lock error
		}
	}
	for i := 0; i < cfg.Conns; i++ {
		c, err := connect(l, args)
		if err != nil {
			s.closeConns()
			if h, ok := heldByOther(path); ok {
				return nil, h
			}
			return nil, fmt.Errorf("embedded store: connect to %s: %w", path, err)
		}
		s.conns = append(s.conns, c)
	}
	db := schemas.QuoteIdent(cfg.Database)
	for _, c := range s.conns {
		if !cfg.ReadOnly {
			if _, err := c.query("CREATE DATABASE IF NOT EXISTS "+db, "", nil); err != nil {
				s.closeConns()
				return nil, fmt.Errorf("embedded store: create database %s: %w", cfg.Database, err)
			}
		}
		if _, err := c.query("USE "+db, "", nil); err != nil {
			s.closeConns()
			return nil, fmt.Errorf("embedded store: use database %s: %w", cfg.Database, err)
		}
		if cfg.ReadOnly {
			// Introspection functions (on in chDB) read the program's symbols
			// and debug information; turned off before readonly=1, which then
			// forbids every setting change (SET, SETTINGS) on the connection.
			if _, err := c.query("SET allow_introspection_functions = 0", "", nil); err != nil {
				s.closeConns()
				return nil, fmt.Errorf("embedded store: set read-only: %w", err)
			}
			if _, err := c.query("SET readonly = 1", "", nil); err != nil {
				s.closeConns()
				return nil, fmt.Errorf("embedded store: set read-only: %w", err)
			}
		}
		s.pool <- c
	}
	if cfg.ReleaseStartupCode && !engine.codeReleased {
		engine.codeReleased = true
		pageByPage := cfg.ReleaseCodeEvery > 0
		if before, after, err := releaseCode(cfg.LibPath, pageByPage); err != nil {
			s.log.Warn("embedded store: could not release the engine's and the program's start-up code pages; it keeps them resident", "err", err)
		} else {
			s.log.Info("embedded store: released the engine's and the program's start-up code pages", "file_rss_mib_before", before>>20, "file_rss_mib_after", after>>20, "page_by_page", pageByPage)
			if pageByPage {
				engine.code = newCodeReleaser(cfg.LibPath, cfg.ReleaseCodeEvery, s.log)
			}
		}
	}
	if cfg.ReleaseCodeEvery > 0 {
		s.code = engine.code
	}
	engine.path = path
	engine.refs++
	s.log.Debug("embedded store open", "path", path, "database", cfg.Database, "conns", cfg.Conns)
	return s, nil
}

func (s *Store) closeConns() {
	for _, c := range s.conns {
		c.close()
	}
	s.conns = nil
}

// Database returns the database holding gpupool's tables.
func (s *Store) Database() string { return s.cfg.Database }

// Path returns the absolute data directory.
func (s *Store) Path() string { return s.cfg.Path }

// acquire takes a free connection, waiting for one or for ctx.
func (s *Store) acquire(ctx context.Context) (*conn, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, store.ErrClosed
	}
	select {
	case c, ok := <-s.pool:
		if !ok || c == nil {
			return nil, store.ErrClosed
		}
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Store) release(c *conn) { s.pool <- c }

// Exec runs a statement that returns no rows.
func (s *Store) Exec(ctx context.Context, sql string, params store.Params) error {
	c, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	defer s.release(c)
	_, err = c.query(sql, "", store.BindParams(sql, params))
	forgetTableTypesUnlessRead(sql)
	if err != nil {
		return fmt.Errorf("exec %s: %w", store.Abbreviate(sql), err)
	}
	return nil
}

// Query runs a statement and returns all its rows. They come in RowBinary
// (store.ParseRowBinary); a result with a column of a type that reader leaves to
// the text form is asked for again in JSONCompact.
func (s *Store) Query(ctx context.Context, sql string, params store.Params) (*store.Result, error) {
	bound := store.BindParams(sql, params)
	data, err := s.queryData(ctx, sql, store.RowBinaryFormat, bound)
	if err != nil {
		return nil, err
	}
	out, err := store.ParseRowBinary(data)
	if !errors.Is(err, store.ErrUnsupportedType) {
		return out, err
	}
	if data, err = s.queryData(ctx, sql, "JSONCompact", bound); err != nil {
		return nil, err
	}
	return store.ParseJSONCompact(data)
}

// queryData runs a query on a connection of the pool and returns its output in
// format; the connection goes back before the output is read.
func (s *Store) queryData(ctx context.Context, sql, format string, params map[string]string) ([]byte, error) {
	c, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	res, err := c.query(sql, format, params)
	s.release(c)
	forgetTableTypesUnlessRead(sql)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", store.Abbreviate(sql), err)
	}
	return res.Data, nil
}

// Insert streams b into table in Native format, a column at a time; a non-empty
// token deduplicates it. A column whose type does not fit the table's is
// refused before any row is written (store.ErrNarrowing; see checkBlockTypes).
func (s *Store) Insert(ctx context.Context, table string, b *store.Block, token string) error {
	if err := b.Check(); err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	if b.Rows() == 0 {
		return nil
	}
	q := insertSQL(s.cfg.Database, table, b.ColumnNames(), token)
	c, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	defer s.release(c)
	if err := c.checkBlockTypes(s.cfg.Database, table, b); err != nil {
		return fmt.Errorf("insert %d rows into %s: %w", b.Rows(), table, err)
	}
	if _, err := c.insertBlock(q, b); err != nil {
		forgetTableTypes() // the table may have changed under a stale entry
		return fmt.Errorf("insert %d rows into %s: %w", b.Rows(), table, err)
	}
	if s.code != nil {
		s.code.inserted()
	}
	return nil
}

// insertSQL is the block's INSERT with the deduplication settings for token.
func insertSQL(db, table string, cols []string, token string) string {
	q := store.InsertStatement(db, table, cols)
	if token == "" {
		return q
	}
	return q + " SETTINGS insert_deduplicate = 1, deduplicate_blocks_in_dependent_materialized_views = 1, insert_deduplication_token = " + quoteString(token)
}

func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// Close closes the store's connections. The engine stays loaded; once every Store
// of the process is closed, another data path may be opened.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	// Wait for in-flight statements: take every connection back.
	for range s.conns {
		<-s.pool
	}
	close(s.pool)
	s.closeConns()
	engine.mu.Lock()
	engine.refs--
	engine.mu.Unlock()
	return nil
}
