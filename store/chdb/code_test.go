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
	"testing"
	"time"

	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// TestReleaseStartupCode checks Config.ReleaseStartupCode: a child process opens
// the store with it off and on, runs an insert and a query, and prints its
// file-backed resident memory (mostly libchdb.so's code). Released, the code
// the engine ran only at start-up stays out: less than half as much is resident.
//
// The children load a private copy of the library: the kernel does not page
// out a page another process maps too, and under `go test ./...` other test
// binaries map the same libchdb.so at the same time (CI failed on that: 175 MiB
// kept, 100 released; with one process holding the whole file mapped, nothing
// is released at all).
func TestReleaseStartupCode(t *testing.T) {
	if os.Getenv("GPUPOOL_TEST_CODE_CHILD") != "" {
		codeChild(t)
		return
	}
	rss := childFileRSS(t, "TestReleaseStartupCode", "GPUPOOL_TEST_CODE_CHILD", "off", "on")
	t.Logf("file-backed resident memory after open, an insert and a query: %d MiB kept, %d MiB released", rss["off"]>>10, rss["on"]>>10)
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
	lib := privateLib(t)
	rss := map[string]uint64{}
	for _, mode := range modes {
		out := runChild(t, test, append(os.Environ(), env+"="+mode, "GPUPOOL_TEST_CODE_DIR="+t.TempDir(), "GPUPOOL_CHDB_LIB="+lib))
		m := regexp.MustCompile(`file_rss_kib=(\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("child (%s=%s) printed no file_rss_kib:\n%s", env, mode, out)
		}
		rss[mode], _ = strconv.ParseUint(m[1], 10, 64)
	}
	return rss
}

// privateLib copies libchdb.so into the test's temporary directory and syncs
// it to disk (the kernel cannot page out a dirty page without writing it).
func privateLib(t *testing.T) string {
	t.Helper()
	src, err := os.Open(chdbtest.LibPath())
	if err != nil {
		t.Fatalf("libchdb.so: %v", err)
	}
	defer src.Close()
	lib := filepath.Join(t.TempDir(), "libchdb.so")
	dst, err := os.Create(lib)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatalf("copy %s: %v", src.Name(), err)
	}
	if err := dst.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return lib
}

func codeChild(t *testing.T) {
	s := openChildStore(t, func(cfg *chdb.Config) {
		cfg.ReleaseStartupCode = os.Getenv("GPUPOOL_TEST_CODE_CHILD") == "on"
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
	fmt.Printf("file_rss_kib=%d\n", rss>>10)
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
