package clickhouse

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
	"github.com/gpupool/gpupool/store/storetest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

// The tests in this file need a ClickHouse server. By default they run against a
// chDB endpoint (clickhouse-local serving the native protocol, started once per
// test binary by chdbtest.SharedEndpoint); GPUPOOL_TEST_CLICKHOUSE names a real
// server instead (24 or later): its native address ("localhost:9000") or a DSN
// ("clickhouse://user:pass@host:9000?cluster=c"). Each test works in a database of
// its own, dropped when it ends. TestServerStore runs the suite store/chdb runs too
// (store/storetest), so both backends are held to the same behaviour.

const serverEnv = "GPUPOOL_TEST_CLICKHOUSE"

// serverConfig returns the configuration of the test server with a new, unique
// database, or skips the test when no server is named.
func serverConfig(t *testing.T) Config {
	t.Helper()
	target := os.Getenv(serverEnv)
	if target == "" {
		if os.Getenv(chdbtest.NoEndpointEnv) == "1" {
			t.Skip(chdbtest.NoEndpointEnv + "=1 and GPUPOOL_TEST_CLICKHOUSE not set: no ClickHouse server to test against")
		}
		ep, err := chdbtest.SharedEndpoint()
		if err != nil {
			t.Fatalf("no ClickHouse server to test against: %v (run \"make deps\" for libchdb.so, set GPUPOOL_TEST_CLICKHOUSE to a server's host:port, or %s=1 to skip)", err, chdbtest.NoEndpointEnv)
		}
		target = ep.TCPAddr
	}
	cfg := DefaultConfig()
	if strings.Contains(target, "://") {
		var err error
		if cfg, err = ParseDSN(target); err != nil {
			t.Fatalf("%s: %v", serverEnv, err)
		}
	} else {
		cfg.Addr = strings.Split(target, ",")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	cfg.Database = "gpupool_test_" + hex.EncodeToString(b[:])
	return cfg
}

// openServer opens a store on a new database and drops it when the test ends.
func openServer(t *testing.T) *Store {
	t.Helper()
	return openServerConfig(t, serverConfig(t))
}

func openServerConfig(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("open %s: %v", strings.Join(cfg.Addr, ","), err)
	}
	t.Cleanup(func() {
		// t.Context is done by now.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p := schemas.MigrationParams{Cluster: cfg.Cluster}
		if s.closed.Load() {
			if s2, err := Open(ctx, cfg); err == nil {
				s = s2
			}
		}
		if err := s.Exec(ctx, "DROP DATABASE IF EXISTS "+schemas.QuoteIdent(cfg.Database)+" "+p.OnCluster()+" SYNC", nil); err != nil {
			t.Logf("drop test database %s: %v", cfg.Database, err)
		}
		_ = s.Close()
	})
	return s
}

// TestServerStore holds the clickhouse-go backend to the behaviour every backend
// shares.
func TestServerStore(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return openServer(t) },
		Reopen: func(t *testing.T, s store.Store, readOnly bool) store.Store {
			cfg := s.(*Store).cfg
			cfg.ReadOnly = readOnly
			s2, err := Open(t.Context(), cfg)
			if err != nil {
				t.Fatalf("reopen %s: %v", cfg.Database, err)
			}
			t.Cleanup(func() { _ = s2.Close() })
			return s2
		},
	})
}

func TestServerAsyncInsert(t *testing.T) {
	ctx := t.Context()
	cfg := serverConfig(t)
	cfg.AsyncInsert = true
	s := openServerConfig(t, cfg)
	if err := s.Exec(ctx, "CREATE TABLE a (x UInt32, s String) ENGINE = MergeTree ORDER BY x", nil); err != nil {
		t.Fatal(err)
	}
	x, str := store.NewUInt32("x"), store.NewString("s")
	x.Append(1, 2, 3)
	str.Append("a", "b", "c")
	if err := s.Insert(ctx, "a", store.NewBlock(x, str), ""); err != nil {
		t.Fatal(err)
	}
	// wait_for_async_insert=1: the rows are written when Insert returns.
	if n := storetest.Count(t, s, "a"); n != 3 {
		t.Fatalf("%d rows after an async insert, want 3", n)
	}
}
