//go:build linux

package chdb_test

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// TestReleaseStartupCode checks Config.ReleaseStartupCode: a child process opens
// the store with it off and on, runs an insert and a query, and prints its
// file-backed resident memory (mostly libchdb.so's code) and its executable's.
// Released, the code the engine and the Go program ran only at start-up stays
// out: less than half as much is resident, and less of the executable.
//
// The children load a private copy of the library, and run one of the test
// binary: the kernel does not page
// out a page another process maps too, and under `go test ./...` other test
// binaries map the same libchdb.so at the same time (CI failed on that: 175 MiB
// kept, 100 released; with one process holding the whole file mapped, nothing
// is released at all).
func TestReleaseStartupCode(t *testing.T) {
	if os.Getenv("GPUPOOL_TEST_CODE_CHILD") != "" {
		codeChild(t)
		return
	}
	rss, exe := childCodeRSS(t, "TestReleaseStartupCode", "GPUPOOL_TEST_CODE_CHILD", "off", "on", "page")
	t.Logf("file-backed resident memory after open, an insert and a query: %d MiB kept, %d MiB released, %d MiB released to come back page by page; of it the executable's %d, %d and %d KiB",
		rss["off"]>>10, rss["on"]>>10, rss["page"]>>10, exe["off"], exe["on"], exe["page"])
	// What comes back of the executable is what the child runs after the
	// release, the Go runtime's collector included: 2.5–3.8 MiB of 6 in 16 runs
	// (kept, every page stays).
	if 4*exe["page"] >= 3*exe["off"] {
		t.Errorf("the executable's own code: %d KiB resident released page by page, not less than three quarters of %d KiB kept", exe["page"], exe["off"])
	}
	if rss["off"] < 100<<10 {
		t.Fatalf("with the code kept, only %d MiB is resident: the library's start-up no longer touches most of it, and this test measures nothing", rss["off"]>>10)
	}
	if 2*rss["on"] >= rss["off"] {
		t.Errorf("released: %d MiB resident, not less than half of %d MiB kept", rss["on"]>>10, rss["off"]>>10)
	}
}

// childFileRSS runs test in a child process once per mode (the value of env),
// each on its own data directory and a private copy of the library, and returns
// the file-backed resident KiB each printed as file_rss_kib.
func childFileRSS(t *testing.T, test, env string, modes ...string) map[string]uint64 {
	t.Helper()
	rss, _ := childCodeRSS(t, test, env, modes...)
	return rss
}

// childCodeRSS is childFileRSS, each child also running from a private copy of
// the test binary; it returns too the resident KiB of the executable's own
// pages each printed as exe_rss_kib.
func childCodeRSS(t *testing.T, test, env string, modes ...string) (file, exe map[string]uint64) {
	t.Helper()
	lib, bin := privateLib(t), privateCopy(t, os.Args[0])
	file, exe = map[string]uint64{}, map[string]uint64{}
	for _, mode := range modes {
		out := runChildOf(t, bin, test, append(os.Environ(), env+"="+mode, "GPUPOOL_TEST_CODE_DIR="+t.TempDir(), "GPUPOOL_CHDB_LIB="+lib))
		for key, into := range map[string]map[string]uint64{"file_rss_kib": file, "exe_rss_kib": exe} {
			m := regexp.MustCompile(key + `=(\d+)`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("child (%s=%s) printed no %s:\n%s", env, mode, key, out)
			}
			into[mode], _ = strconv.ParseUint(m[1], 10, 64)
		}
	}
	return file, exe
}

// privateLib copies libchdb.so into the test's temporary directory (see
// privateCopy).
func privateLib(t *testing.T) string {
	t.Helper()
	return privateCopy(t, chdbtest.LibPath())
}

// privateCopy copies the file src into the test's temporary directory, keeping
// its name and mode, and syncs it to disk (the kernel cannot page out a dirty
// page without writing it).
func privateCopy(t *testing.T, src string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	if err := out.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

func codeChild(t *testing.T) {
	s := openChildStore(t, func(cfg *chdb.Config) {
		mode := os.Getenv("GPUPOOL_TEST_CODE_CHILD")
		cfg.ReleaseStartupCode = mode != "off"
		if mode == "page" {
			cfg.ReleaseCodeEvery = time.Hour // page by page, as a lean store does
		}
	},
		"CREATE TABLE t (ts DateTime64(3), gpu LowCardinality(String), v Float32) ENGINE = MergeTree ORDER BY (gpu, ts)",
		"INSERT INTO t SELECT now64(3) - number, toString(number % 8), number / 7 FROM numbers(100000)",
	)
	if _, err := s.Query(t.Context(), "SELECT gpu, avg(v) FROM t GROUP BY gpu", nil); err != nil {
		t.Fatal(err)
	}
	printFileRSS(t)
}

// openChildStore opens a child's store on its data directory with edit applied
// to its configuration, and runs stmts; the store closes with the test.
func openChildStore(t *testing.T, edit func(*chdb.Config), stmts ...string) *chdb.Store {
	t.Helper()
	cfg := chdbtest.Config(t)
	cfg.Path = os.Getenv("GPUPOOL_TEST_CODE_DIR")
	edit(&cfg)
	s, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, q := range stmts {
		if err := s.Exec(t.Context(), q, nil); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// printFileRSS prints the child's file-backed resident KiB for childFileRSS.
func printFileRSS(t *testing.T) {
	t.Helper()
	rss, err := chdb.FileRSS()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := exeRSS()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("file_rss_kib=%d exe_rss_kib=%d\n", rss>>10, exe>>10)
}

// exeRSS is the resident bytes of the pages of the process's executable file
// (its mappings' resident pages less those the process wrote: /proc/self/smaps).
func exeRSS() (uint64, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var kib int64
	var in bool
	for line := range strings.Lines(string(data)) {
		fs := strings.Fields(line)
		switch {
		case len(fs) >= 5 && !strings.HasSuffix(fs[0], ":"): // a mapping's header: range perms offset dev inode [path]
			in = len(fs) >= 6 && fs[5] == exe
		case in && len(fs) >= 2 && (fs[0] == "Rss:" || fs[0] == "Anonymous:"):
			v, err := strconv.ParseInt(fs[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/self/smaps: %q: %w", line, err)
			}
			if fs[0] == "Anonymous:" {
				v = -v
			}
			kib += v
		}
	}
	return uint64(kib) << 10, nil
}

// TestReleaseCodeAsItWrites checks Config.ReleaseCodeEvery: two child processes
// open the store releasing the engine's start-up code, one of them releasing
// its code again as it writes; each writes 40 blocks into a table feeding a
// rollup (as ingest does: the first inserts and merges run code the next ones
// do not) and prints its file-backed resident memory. Writing with the
// releases, less of the engine's code stays resident.
func TestReleaseCodeAsItWrites(t *testing.T) {
	if os.Getenv("GPUPOOL_TEST_WRITE_CHILD") != "" {
		writeChild(t)
		return
	}
	rss := childFileRSS(t, "TestReleaseCodeAsItWrites", "GPUPOOL_TEST_WRITE_CHILD", "open", "writing")
	t.Logf("file-backed resident memory after 40 inserts: %d MiB released at open only, %d MiB released as it writes", rss["open"]>>10, rss["writing"]>>10)
	if 5*rss["writing"] >= 4*rss["open"] {
		t.Errorf("released as it writes: %d MiB resident, not a fifth less than %d MiB released at open only", rss["writing"]>>10, rss["open"]>>10)
	}
}

func writeChild(t *testing.T) {
	s := openChildStore(t, func(cfg *chdb.Config) {
		cfg.ReleaseStartupCode = true
		if os.Getenv("GPUPOOL_TEST_WRITE_CHILD") == "writing" {
			cfg.ReleaseCodeEvery = 10 * time.Minute
		}
	},
		"CREATE TABLE t (ts DateTime64(3), gpu LowCardinality(String), pid UInt32, v Nullable(Float32)) ENGINE = MergeTree ORDER BY (gpu, pid, ts)",
		"CREATE TABLE t_minute (minute DateTime, gpu LowCardinality(String), n UInt64, v Float64) ENGINE = SummingMergeTree ORDER BY (gpu, minute)",
		"CREATE MATERIALIZED VIEW t_minute_mv TO t_minute AS SELECT toStartOfMinute(ts) AS minute, gpu, count() AS n, sum(assumeNotNull(v)) AS v FROM t GROUP BY minute, gpu",
	)
	ctx := t.Context()
	start := time.Now().UnixMilli()
	for i := range 40 {
		ts, gpu, pid, v := store.NewDateTime64Ms("ts"), store.NewLowCardinalityString("gpu"), store.NewUInt32("pid"), store.NewNullableFloat32("v")
		for r := range 20_000 {
			ts.Append(start + int64(i*20_000+r))
			gpu.Append(fmt.Sprintf("GPU-%d", r%64))
			pid.Append(uint32(r % 512))
			if r%7 == 0 {
				v.Append(float32(math.NaN())) // NULL
			} else {
				v.Append(float32(r%100) / 100)
			}
		}
		if err := s.Insert(ctx, "t", store.NewBlock(ts, gpu, pid, v), fmt.Sprintf("b%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	chdb.WaitCodeRelease(s)
	printFileRSS(t)
}
