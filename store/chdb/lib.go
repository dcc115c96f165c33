package chdb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/gpupool/gpupool/store"
)

// LibVersion is the chDB release the project is built and tested against; `make deps`
// fetches it from the npm package @chdb/lib-linux-x64-gnu into the user cache.
const LibVersion = "26.7.3-stable.1"

// DefaultLibPath returns where `make deps` puts libchdb.so:
// $XDG_CACHE_HOME/gpupool/chdb/<LibVersion>/libchdb.so (usually ~/.cache/...).
func DefaultLibPath() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = filepath.Join(os.TempDir(), "gpupool-cache")
	}
	return filepath.Join(dir, "gpupool", "chdb", LibVersion, "libchdb.so")
}

// lib holds the C entry points of libchdb.so. It is filled once, on first use, so a
// binary that never opens the embedded store never needs the library.
type lib struct {
	version         func() string
	setSignals      func(enabled int32)
	connect         func(argc int32, argv unsafe.Pointer) unsafe.Pointer
	closeConn       func(conn unsafe.Pointer)
	queryN          func(conn unsafe.Pointer, q unsafe.Pointer, qlen uintptr, f unsafe.Pointer, flen uintptr) unsafe.Pointer
	queryParamsN    func(conn unsafe.Pointer, q unsafe.Pointer, qlen uintptr, f unsafe.Pointer, flen uintptr, names unsafe.Pointer, nameLens unsafe.Pointer, values unsafe.Pointer, valueLens unsafe.Pointer, n uintptr) unsafe.Pointer
	streamInsertN   func(conn unsafe.Pointer, q unsafe.Pointer, qlen uintptr, f unsafe.Pointer, flen uintptr) unsafe.Pointer
	streamAppend    func(stream unsafe.Pointer, data unsafe.Pointer, n uintptr) int32
	streamDone      func(stream unsafe.Pointer) unsafe.Pointer
	streamCancel    func(stream unsafe.Pointer)
	streamError     func(stream unsafe.Pointer) string
	streamDestroy   func(stream unsafe.Pointer)
	destroyResult   func(res unsafe.Pointer)
	resultBuffer    func(res unsafe.Pointer) unsafe.Pointer
	resultLength    func(res unsafe.Pointer) uintptr
	resultRowsRead  func(res unsafe.Pointer) uint64
	resultRowsWrit  func(res unsafe.Pointer) uint64
	resultError     func(res unsafe.Pointer) string
	resultElapsed   func(res unsafe.Pointer) float64
	resultBytesRead func(res unsafe.Pointer) uint64
}

var (
	loadMu     sync.Mutex
	loaded     *lib
	loadedPath string
)

// libLoaded reports whether this process has loaded the library.
func libLoaded() bool {
	loadMu.Lock()
	defer loadMu.Unlock()
	return loaded != nil
}

// load opens libchdb.so at path the first time it succeeds; later calls return the
// same library, because a process can hold only one copy of the engine. A failed
// load is not remembered, so a later call may name the right path.
func load(path string) (*lib, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded != nil {
		if path != loadedPath {
			return nil, fmt.Errorf("chdb: library already loaded from %s, cannot load %s in the same process", loadedPath, path)
		}
		return loaded, nil
	}
	l, err := open(path)
	if err != nil {
		return nil, err
	}
	loaded, loadedPath = l, path
	return l, nil
}

func open(path string) (l *lib, err error) {
	if _, statErr := os.Stat(path); statErr != nil {
		return nil, fmt.Errorf("%w: %s (run \"make deps\" or set GPUPOOL_CHDB_LIB to its path)", ErrLibraryMissing, path)
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: dlopen %s: %v", ErrLibraryMissing, path, err)
	}
	// RegisterLibFunc panics on a missing symbol (an older libchdb.so); turn that
	// into an error that names the version we need.
	defer func() {
		if r := recover(); r != nil {
			l, err = nil, fmt.Errorf("%w: %s lacks a required symbol (%v); libchdb %s or newer is needed", ErrLibraryMissing, path, r, LibVersion)
		}
	}()
	l = &lib{}
	reg := func(fn any, name string) { purego.RegisterLibFunc(fn, h, name) }
	reg(&l.version, "chdb_version")
	reg(&l.setSignals, "chdb_set_signal_handlers_enabled")
	reg(&l.connect, "chdb_connect")
	reg(&l.closeConn, "chdb_close_conn")
	reg(&l.queryN, "chdb_query_n")
	reg(&l.queryParamsN, "chdb_query_with_params_n")
	reg(&l.streamInsertN, "chdb_stream_insert_n")
	reg(&l.streamAppend, "chdb_stream_append")
	reg(&l.streamDone, "chdb_stream_done")
	reg(&l.streamCancel, "chdb_stream_cancel_insert")
	reg(&l.streamError, "chdb_stream_insert_error")
	reg(&l.streamDestroy, "chdb_destroy_insert_stream")
	reg(&l.destroyResult, "chdb_destroy_query_result")
	reg(&l.resultBuffer, "chdb_result_buffer")
	reg(&l.resultLength, "chdb_result_length")
	reg(&l.resultRowsRead, "chdb_result_rows_read")
	reg(&l.resultRowsWrit, "chdb_result_rows_written")
	reg(&l.resultError, "chdb_result_error")
	reg(&l.resultElapsed, "chdb_result_elapsed")
	reg(&l.resultBytesRead, "chdb_result_bytes_read")
	// The Go runtime owns the process's signal handlers (goroutine preemption uses
	// SIGURG, nil dereferences SIGSEGV); chDB must not replace them.
	l.setSignals(0)
	return l, nil
}

// cstrings holds NUL-terminated copies of Go strings for one C call.
type cstrings struct {
	bufs [][]byte
	ptrs []*byte
}

func newCStrings(ss []string) *cstrings {
	c := &cstrings{bufs: make([][]byte, len(ss)), ptrs: make([]*byte, len(ss))}
	for i, s := range ss {
		b := make([]byte, len(s)+1)
		copy(b, s)
		c.bufs[i] = b
		c.ptrs[i] = &b[0]
	}
	return c
}

func (c *cstrings) argv() unsafe.Pointer {
	if len(c.ptrs) == 0 {
		return nil
	}
	return unsafe.Pointer(&c.ptrs[0])
}

// conn is one chDB connection. A connection runs one statement at a time; callers
// serialise their use of it.
type conn struct {
	l    *lib
	ptr  unsafe.Pointer // chdb_connection* as returned by chdb_connect
	self unsafe.Pointer // *ptr, the chdb_connection handle passed to queries
	buf  []byte         // insertBlock's encoding buffer, reused
}

func connect(l *lib, args []string) (*conn, error) {
	argv := newCStrings(append([]string{"clickhouse"}, args...))
	p := l.connect(int32(len(argv.ptrs)), argv.argv())
	runtime.KeepAlive(argv)
	if p == nil {
		return nil, errors.New("chdb_connect returned no connection")
	}
	self := *(*unsafe.Pointer)(p)
	if self == nil {
		return nil, errors.New("chdb_connect returned an empty connection")
	}
	return &conn{l: l, ptr: p, self: self}, nil
}

func (c *conn) close() {
	if c.ptr != nil {
		c.l.closeConn(c.ptr)
		c.ptr, c.self = nil, nil
	}
}

// result is what a statement returned: its output bytes (in the requested format)
// and counters.
type result struct {
	Data        []byte
	RowsRead    uint64
	RowsWritten uint64
	Elapsed     float64
}

func bytePtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// takeResult copies a chdb_result into Go memory and frees it.
func (c *conn) takeResult(res unsafe.Pointer) (*result, error) {
	if res == nil {
		return &result{}, nil
	}
	defer c.l.destroyResult(res)
	if msg := c.l.resultError(res); msg != "" {
		return nil, &QueryError{Message: msg}
	}
	out := &result{
		RowsRead:    c.l.resultRowsRead(res),
		RowsWritten: c.l.resultRowsWrit(res),
		Elapsed:     c.l.resultElapsed(res),
	}
	if n := c.l.resultLength(res); n > 0 {
		buf := c.l.resultBuffer(res)
		out.Data = make([]byte, n)
		copy(out.Data, unsafe.Slice((*byte)(buf), n))
	}
	return out, nil
}

// query runs one statement with server-side {name:Type} parameters and returns its
// output in format.
func (c *conn) query(sql, format string, params map[string]string) (*result, error) {
	q := []byte(sql)
	f := []byte(format)
	var res unsafe.Pointer
	if len(params) == 0 {
		res = c.l.queryN(c.self, bytePtr(q), uintptr(len(q)), bytePtr(f), uintptr(len(f)))
	} else {
		names := make([]string, 0, len(params))
		values := make([]string, 0, len(params))
		for k, v := range params {
			names = append(names, k)
			values = append(values, v)
		}
		cn, cv := newCStrings(names), newCStrings(values)
		nl := make([]uintptr, len(names))
		vl := make([]uintptr, len(values))
		for i := range names {
			nl[i], vl[i] = uintptr(len(names[i])), uintptr(len(values[i]))
		}
		res = c.l.queryParamsN(c.self, bytePtr(q), uintptr(len(q)), bytePtr(f), uintptr(len(f)),
			cn.argv(), unsafe.Pointer(&nl[0]), cv.argv(), unsafe.Pointer(&vl[0]), uintptr(len(names)))
		runtime.KeepAlive(cn)
		runtime.KeepAlive(cv)
		runtime.KeepAlive(nl)
		runtime.KeepAlive(vl)
	}
	runtime.KeepAlive(q)
	runtime.KeepAlive(f)
	return c.takeResult(res)
}

// openInsert starts a stream into the INSERT statement sql (which has no FORMAT
// clause) reading format; the caller destroys it.
func (c *conn) openInsert(sql, format string) (unsafe.Pointer, error) {
	q, f := []byte(sql), []byte(format)
	st := c.l.streamInsertN(c.self, bytePtr(q), uintptr(len(q)), bytePtr(f), uintptr(len(f)))
	runtime.KeepAlive(q)
	runtime.KeepAlive(f)
	if st == nil {
		return nil, errors.New("chdb_stream_insert returned no stream")
	}
	if msg := c.l.streamError(st); msg != "" {
		c.l.streamDestroy(st)
		return nil, &QueryError{Message: msg}
	}
	return st, nil
}

// appendChunk feeds chunk to the stream st; when the engine refuses it the stream
// is cancelled and its message returned.
func (c *conn) appendChunk(st unsafe.Pointer, chunk []byte) error {
	rc := c.l.streamAppend(st, bytePtr(chunk), uintptr(len(chunk)))
	runtime.KeepAlive(chunk)
	if rc != 0 {
		msg := c.l.streamError(st)
		c.l.streamCancel(st)
		return &QueryError{Message: msg}
	}
	return nil
}

// insertBlock streams b in Native format, a column at a time through the
// connection's reused buffer: the engine copies each chunk it is given, so the Go
// side never holds the whole encoded block.
func (c *conn) insertBlock(sql string, b *store.Block) (*result, error) {
	st, err := c.openInsert(sql, "Native")
	if err != nil {
		return nil, err
	}
	defer c.l.streamDestroy(st)
	c.buf, err = b.WriteNative(c.buf, func(chunk []byte) error { return c.appendChunk(st, chunk) })
	if cap(c.buf) > maxConnBuf {
		c.buf = nil // one huge column should not pin its buffer for good
	}
	if err != nil {
		return nil, err
	}
	return c.takeResult(c.l.streamDone(st))
}

// maxConnBuf is the largest encoding buffer a connection keeps between inserts.
const maxConnBuf = 16 << 20

// insert streams data (already encoded in format) into the INSERT statement sql,
// which has no FORMAT clause, and commits it.
func (c *conn) insert(sql, format string, chunks ...[]byte) (*result, error) {
	st, err := c.openInsert(sql, format)
	if err != nil {
		return nil, err
	}
	defer c.l.streamDestroy(st)
	for _, chunk := range chunks {
		if len(chunk) == 0 {
			continue
		}
		if err := c.appendChunk(st, chunk); err != nil {
			return nil, err
		}
	}
	return c.takeResult(c.l.streamDone(st))
}
