package testservers

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/internal/config"
	"github.com/gpupool/gpupool/internal/demo"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/backend"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
	"github.com/gpupool/gpupool/store/clickhouse"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

// clickhouseConfig reaches the chDB endpoint the test binary starts
// (chdbtest.SharedEndpoint), or the server GPUPOOL_TEST_CLICKHOUSE names.
func clickhouseConfig(t *testing.T) clickhouse.Config {
	t.Helper()
	cfg := clickhouse.DefaultConfig()
	if a := os.Getenv("GPUPOOL_TEST_CLICKHOUSE"); a != "" {
		if !strings.Contains(a, "://") {
			cfg.Addr = strings.Split(a, ",")
			return cfg
		}
		cfg, err := clickhouse.ParseDSN(a)
		if err != nil {
			t.Fatalf("GPUPOOL_TEST_CLICKHOUSE: %v", err)
		}
		return cfg
	}
	if os.Getenv(chdbtest.NoEndpointEnv) == "1" {
		t.Skip(chdbtest.NoEndpointEnv + "=1: no ClickHouse endpoint")
	}
	ep, err := chdbtest.SharedEndpoint()
	if err != nil {
		t.Fatalf("no ClickHouse endpoint: %v (run \"make deps\" for libchdb.so, or %s=1 to skip)", err, chdbtest.NoEndpointEnv)
	}
	cfg.Addr = []string{ep.TCPAddr}
	return cfg
}

// TestDemoOnClickHouseServer runs the server path end to end: a small simulated
// fleet published through the embedded NATS, ingest storing it over the native
// protocol into a ClickHouse endpoint (the clickhouse-go backend) and the
// analyzer's passes on it; and the same seed on the embedded engine.
// The two stores hold the same chargeback, job by job, and the same findings.
func TestDemoOnClickHouseServer(t *testing.T) {
	chCfg := clickhouseConfig(t)
	run := func(server bool) (store.Store, config.Config) {
		c := config.Default()
		c.DataDir = t.TempDir()
		c.LogLevel = "warn"
		c.Store.CHDB.LibPath = chdbtest.LibPath()
		if server {
			var b [6]byte
			_, _ = rand.Read(b[:])
			c.Store.Backend = backend.ClickHouse
			c.Store.ClickHouse = chCfg
			c.Store.ClickHouse.Database = "gpupool_e2e_" + hex.EncodeToString(b[:])
		}
		c.Sim.Clusters, c.Sim.NodesPerCluster, c.Sim.GPUsPerNode, c.Sim.Load, c.Sim.Seed = 1, 4, 4, 0.95, 2
		c.Demo.Duration, c.Demo.Speed = time.Hour, 0
		// The fleet admits its own jobs and no policy acts: what is compared is
		// what ingest stored and the analyzer made of it.
		c.Demo.Admission = config.AdmissionFleet
		demo.Apply(&c, 0)
		if err := c.Finish(""); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		d, err := demo.New(c, demo.WithOutput(&out), demo.WithProgress(reports.NewProgressLines(io.Discard, time.Hour)), demo.WithBaseline(false), demo.WithEnforcement(false))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Run(t.Context()); err != nil {
			t.Fatalf("demo (server %v): %v\n%s", server, err, out.String())
		}
		st, err := backend.OpenExisting(t.Context(), c.Store, slog.New(slog.DiscardHandler), false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if server {
				_ = st.Exec(t.Context(), "DROP DATABASE IF EXISTS "+st.Database(), nil)
			}
			_ = st.Close()
		})
		return st, c
	}
	t0 := time.Now()
	embedded, c := run(false)
	t1 := time.Now()
	server, _ := run(true)
	t.Logf("demo on the embedded engine %s, on the endpoint %s", t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	from, to := c.Sim.Start, c.Sim.Start.Add(c.Demo.Duration)
	want := chargebackByJob(t, embedded, from, to)
	got := chargebackByJob(t, server, from, to)
	if len(want) == 0 {
		t.Fatal("the embedded run charged no job")
	}
	if len(got) != len(want) {
		t.Errorf("server charged %d job attempts, embedded %d", len(got), len(want))
	}
	var total float64
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: charged on the embedded engine (%s), not on the server", k, w)
			continue
		}
		if g != w {
			t.Errorf("%s: server %s, embedded %s", k, g, w)
		}
	}
	for _, r := range mustCompute(t, embedded, from, to) {
		if r.Cost != nil {
			total += *r.Cost
		}
	}
	t.Logf("chargeback of %d job attempts, %.2f in all, the same on both backends", len(want), total)
	f, g := findingCounts(t, embedded), findingCounts(t, server)
	if f != g {
		t.Errorf("findings differ: server %s, embedded %s", g, f)
	}
	t.Logf("findings by kind on both: %s", f)
}

func mustCompute(t *testing.T, st store.Store, from, to time.Time) []chargeback.Row {
	t.Helper()
	rows, err := chargeback.Compute(t.Context(), st, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// chargebackByJob is each attempt's GPU-hours, idle GPU-hours and cost, rounded to
// a millionth (float sums in another order).
func chargebackByJob(t *testing.T, st store.Store, from, to time.Time) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range mustCompute(t, st, from, to) {
		cost := math.NaN()
		if r.Cost != nil {
			cost = *r.Cost
		}
		k := fmt.Sprintf("%s/%s/%s/%s/%d", r.Team, r.Project, r.Job, r.Card, r.Attempt)
		out[k] = fmt.Sprintf("%.6f GPU-h, %.6f idle, cost %.6f %s", r.GPUHours, r.IdleGPUHours, cost, r.Currency)
	}
	return out
}

// findingCounts is the number of findings of each kind.
func findingCounts(t *testing.T, st store.Store) string {
	t.Helper()
	res, err := st.Query(t.Context(), "SELECT kind, uniqExact(id, episode) AS n FROM "+st.Database()+".findings GROUP BY kind ORDER BY kind", nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, row := range res.Rows {
		lines = append(lines, store.FormatValue(row[0])+"="+store.FormatValue(row[1]))
	}
	sort.Strings(lines)
	return fmt.Sprint(lines)
}
