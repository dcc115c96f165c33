package bench

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
	"github.com/gpupool/gpupool/scheduler/audit"
)

// BenchmarkSubmitLatency measures submit latency over the HTTP API (each with
// an idempotency key, as the CLI sends), p50 and p99, at 1 and 8 parallel
// clients, for a scheduler in memory mode (audit trail in memory, no job state
// file) and in persistent mode (audit trail in the embedded store, job state
// file and journal, group commit), in the same run: the persistent figures are
// reported as ratios to memory mode's.
func BenchmarkSubmitLatency(b *testing.B) {
	const submits = 400 // per client count, spread over the clients
	st := openStore(b)
	tokens := filepath.Join(b.TempDir(), "tokens")
	entry := auth.TokenEntry{Name: "bench", Roles: []auth.Role{auth.RoleAdmin}, Hash: auth.HashToken("tok-bench")}
	if err := os.WriteFile(tokens, []byte(entry.String()+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	acfg := auth.DefaultConfig()
	acfg.RateLimit = 0
	acfg.TokensFile = tokens
	g, err := auth.New(b.Context(), acfg)
	if err != nil {
		b.Fatal(err)
	}
	run := func(persistent bool, clients int) (p50, p99 time.Duration) {
		opts := []scheduler.Option{scheduler.WithJobIDPrefix(fmt.Sprintf("%v%d.", persistent, clients))}
		if persistent {
			opts = append(opts, scheduler.WithRecorder(audit.NewStoreRecorder(st)),
				scheduler.WithStateFile(filepath.Join(b.TempDir(), "jobs.json")))
		}
		svc, err := scheduler.New(scheduler.DefaultConfig(), opts...)
		if err != nil {
			b.Fatal(err)
		}
		if err := svc.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(api.NewHandler(svc, g))
		defer srv.Close()
		c, err := api.NewClient(srv.URL, srv.Client(), api.WithToken("tok-bench"))
		if err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		for w := range clients {
			wg.Go(func() {
				for i := range submits / clients {
					spec := scheduler.JobSpec{Team: "nlp", Queue: scheduler.PoolDev, GPUs: 1, Card: "L40S-48GB"}
					t := time.Now()
					if _, err := c.SubmitOnce(b.Context(), spec, fmt.Sprintf("w%d-%d", w, i)); err != nil {
						b.Error(err)
						return
					}
					d := time.Since(t)
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for b.Loop() {
		for _, clients := range []int{1, 8} {
			m50, m99 := run(false, clients)
			p50, p99 := run(true, clients)
			b.ReportMetric(ms(m50), fmt.Sprintf("memory_p50_ms_%dc", clients))
			b.ReportMetric(ms(m99), fmt.Sprintf("memory_p99_ms_%dc", clients))
			b.ReportMetric(ms(p50), fmt.Sprintf("persistent_p50_ms_%dc", clients))
			b.ReportMetric(ms(p99), fmt.Sprintf("persistent_p99_ms_%dc", clients))
			b.ReportMetric(ms(p50)/ms(m50), fmt.Sprintf("ratio_p50_%dc", clients))
			b.ReportMetric(ms(p99)/ms(m99), fmt.Sprintf("ratio_p99_%dc", clients))
		}
	}
	b.ReportMetric(0, "ns/op")
}
