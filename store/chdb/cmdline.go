package chdb

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// RunCommandLine runs clickhouse-local's command line (chdb_query_cmdline) in this
// process with args (without the program name) and returns when its queries end.
// With --listen_host, --tcp_port and --http_port and a query that starts with
// SYSTEM START LISTEN and then runs for as long as it should serve, it is a
// ClickHouse server speaking the native TCP and HTTP protocols on those ports: the
// endpoint store/chdb/chdbtest starts for the clickhouse-go backend's tests. The
// engine holds one data path per process, so the process that calls this should do
// nothing else with chDB; errors of the queries go to standard error.
func RunCommandLine(libPath string, args []string) error {
	if _, err := os.Stat(libPath); err != nil {
		return fmt.Errorf("%w: %s (run \"make deps\" or set GPUPOOL_CHDB_LIB to its path)", ErrLibraryMissing, libPath)
	}
	// dlopen of a path already open returns the same handle, so this and load share
	// one copy of the engine.
	h, err := purego.Dlopen(libPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("%w: dlopen %s: %v", ErrLibraryMissing, libPath, err)
	}
	var (
		setSignals func(enabled int32)
		cmdline    func(argc int32, argv unsafe.Pointer) unsafe.Pointer
	)
	if err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%w: %s lacks a required symbol (%v); libchdb %s or newer is needed", ErrLibraryMissing, libPath, r, LibVersion)
			}
		}()
		purego.RegisterLibFunc(&setSignals, h, "chdb_set_signal_handlers_enabled")
		purego.RegisterLibFunc(&cmdline, h, "chdb_query_cmdline")
		return nil
	}(); err != nil {
		return err
	}
	setSignals(0)
	argv := newCStrings(append([]string{"clickhouse"}, args...))
	cmdline(int32(len(argv.ptrs)), argv.argv())
	runtime.KeepAlive(argv)
	return nil
}
