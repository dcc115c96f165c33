package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/deploy"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
	"github.com/gpupool/gpupool/scheduler/audit"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// simStart is where the test fleet starts; simSpan how long it runs.
var (
	simStart = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	simSpan  = 8 * time.Hour
)

// testTokens are the console's users in the tests; each one's token is
// "tok-<name>".
var testTokens = map[string][]auth.Role{
	"admin":   {auth.RoleAdmin},
	"finance": {auth.RoleFinance},
	"vision":  {auth.TeamRole("vision")},
	"nlp":     {auth.TeamRole("nlp")},
	"agent":   {auth.RoleAgent},
}

// newGuard is a guard whose tokens file holds testTokens, with no rate limit.
func newGuard(t testing.TB) *auth.Guard {
	t.Helper()
	cfg := auth.DefaultConfig()
	cfg.RateLimit = 0
	cfg.TokensFile = filepath.Join(t.TempDir(), "tokens")
	var lines []string
	for name, roles := range testTokens {
		lines = append(lines, auth.TokenEntry{Name: name, Roles: roles, Hash: auth.HashToken("tok-" + name)}.String())
	}
	if err := os.WriteFile(cfg.TokensFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := auth.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// simStore is a store filled by a short simulation of the default fleet (64 GPU
// units, MIG slices, several teams): its samples and job events loaded as
// ingest loads them, the analyzer's passes every 15 minutes of simulated time
// (chargeback rollups and findings, priced by the example price book), and an
// audit trail: a notify action per finding, as the scheduler's policies record
// them.
func simStore(t testing.TB) store.Store {
	t.Helper()
	shared.once.Do(func() { shared.s = buildSim(t) })
	if shared.s == nil {
		t.Fatal("the simulated store failed to build (see the first test's failure)")
	}
	return shared.s
}

// shared is the simulated store of the test binary: built once, read by every
// test (the console only reads), dropped with the data path by chdbtest.Main.
var shared struct {
	once sync.Once
	s    store.Store
}

func buildSim(t testing.TB) store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := chdb.Open(chdbtest.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	prices, err := pricebook.Parse(bytes.NewReader(deploy.PriceBookExample))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pricebook.Load(ctx, s, prices); err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Start, cfg.Tick = simStart, 30*time.Second
	fleet, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := analyzer.New(analyzer.DefaultConfig(), s)
	if err != nil {
		t.Fatal(err)
	}
	l := ingest.NewLoader(s, 500000)
	b := &schemas.SampleBatch{}
	nextPass := simStart.Add(15 * time.Minute)
	for at := simStart; !at.After(simStart.Add(simSpan)); at = at.Add(cfg.Tick) {
		if err := l.AddJobs(ctx, fleet.Advance(at)); err != nil {
			t.Fatal(err)
		}
		for _, n := range fleet.Nodes() {
			b.Cluster, b.Node, b.GPUs, b.Processes = n.Cluster(), n.Name(), b.GPUs[:0], b.Processes[:0]
			if err := n.Sample(ctx, at, b); err != nil {
				t.Fatal(err)
			}
			if err := l.AddSamples(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		if !at.Before(nextPass) {
			if err := l.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Pass(ctx, at); err != nil {
				t.Fatal(err)
			}
			nextPass = nextPass.Add(15 * time.Minute)
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recordActions(t, s)
	return s
}

// recordActions writes a notify action for every finding episode into the audit
// trail, as a policy's first step does.
func recordActions(t testing.TB, s store.Store) {
	t.Helper()
	ctx := context.Background()
	fs, err := findings.Episodes(ctx, s, findings.EpisodeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []scheduler.Action
	for _, f := range fs {
		rows = append(rows, scheduler.Action{
			ID: fmt.Sprintf("notify-%s-%d", f.ID, f.Episode), Time: f.FirstSeen.Add(time.Minute), Decision: "notify", Outcome: "ok",
			Reason: "told the owner about the " + string(f.Kind) + " finding", Policy: string(f.Kind) + "-policy", Job: f.Job,
			Attempt: 1, Pool: f.Pool, Team: f.Team, Project: f.Project, Cluster: f.Cluster, Node: f.Node, Card: f.Card,
			GPUs: len(f.GPUUUIDs), FindingID: f.ID, FindingEpisode: f.Episode, FindingKind: string(f.Kind), Executor: "none", Tries: 1,
		})
	}
	if len(rows) == 0 {
		t.Fatal("the simulation raised no finding: the console's findings pages would prove nothing")
	}
	if err := audit.NewStoreRecorder(s).Record(ctx, rows); err != nil {
		t.Fatal(err)
	}
}

// newScheduler serves a scheduler with the default model (the five pools) and a
// few submitted jobs over its API, and returns an admin client of it.
func newScheduler(t testing.TB) Scheduler {
	t.Helper()
	svc, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, spec := range []scheduler.JobSpec{
		// 12 H100s in a queue of 8: the second job borrows 4 from its cohort.
		{Name: "train-a", Team: "nlp", Queue: scheduler.PoolTrainingExp, GPUs: 6, Card: "H100-80GB"},
		{Name: "train-b", Team: "vision", Queue: scheduler.PoolTrainingExp, GPUs: 6, Card: "H100-80GB"},
		{Name: "serve", Team: "nlp", Queue: scheduler.PoolInferenceOnline, GPUs: 2, Card: "L40S-48GB"},
	} {
		if _, err := svc.Submit(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewHandler(svc, newGuard(t)))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(srv.URL, http.DefaultClient, api.WithToken("tok-admin"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
