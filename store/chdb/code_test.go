//go:build linux

package chdb_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// TestReleaseStartupCode checks Config.ReleaseStartupCode: a child process opens
// the store with it off and on, runs an insert and a query, and prints its
// file-backed resident memory (mostly libchdb.so's code). Released, the code
// the engine ran only at start-up stays out: less than half as much is resident.
func TestReleaseStartupCode(t *testing.T) {
	if os.Getenv("GPUPOOL_TEST_CODE_CHILD") != "" {
		codeChild(t)
		return
	}
	rss := map[string]uint64{}
	for _, release := range []string{"off", "on"} {
		out := runChild(t, "TestReleaseStartupCode", append(os.Environ(), "GPUPOOL_TEST_CODE_CHILD="+release, "GPUPOOL_TEST_CODE_DIR="+t.TempDir()))
		m := regexp.MustCompile(`file_rss_kib=(\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("child (release %s) printed no file_rss_kib:\n%s", release, out)
		}
		rss[release], _ = strconv.ParseUint(string(m[1]), 10, 64)
	}
	t.Logf("file-backed resident memory after open, an insert and a query: %d MiB kept, %d MiB released", rss["off"]>>10, rss["on"]>>10)
	if rss["off"] < 100<<10 {
		t.Fatalf("with the code kept, only %d MiB is resident: the library's start-up no longer touches most of it, and this test measures nothing", rss["off"]>>10)
	}
	if 2*rss["on"] >= rss["off"] {
		t.Errorf("released: %d MiB resident, not less than half of %d MiB kept", rss["on"]>>10, rss["off"]>>10)
	}
}

func codeChild(t *testing.T) {
	cfg := chdbtest.Config(t)
	cfg.Path = os.Getenv("GPUPOOL_TEST_CODE_DIR")
	cfg.ReleaseStartupCode = os.Getenv("GPUPOOL_TEST_CODE_CHILD") == "on"
	s, err := chdb.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	for _, q := range []string{
		"CREATE TABLE t (ts DateTime64(3), gpu LowCardinality(String), v Float32) ENGINE = MergeTree ORDER BY (gpu, ts)",
		"INSERT INTO t SELECT now64(3) - number, toString(number % 8), number / 7 FROM numbers(100000)",
	} {
		if err := s.Exec(ctx, q, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Query(ctx, "SELECT gpu, avg(v) FROM t GROUP BY gpu", nil); err != nil {
		t.Fatal(err)
	}
	rss, err := chdb.FileRSS()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("file_rss_kib=%d\n", rss>>10)
}
