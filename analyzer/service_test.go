package analyzer

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/deploy"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestMain(m *testing.M) { chdbtest.Main(m) }

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// newStore returns a migrated store of its own with the example price book.
func newStore(t *testing.T) store.Store {
	t.Helper()
	s := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	rows, err := pricebook.Parse(bytes.NewReader(deploy.PriceBookExample))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pricebook.Load(t.Context(), s, rows); err != nil {
		t.Fatal(err)
	}
	return s
}

// loadJob writes a job that holds one H100 on node n1 from t0 for d, with the given
// engine activity, sampled every 30 s, and its process.
func loadJob(t *testing.T, l *ingest.Loader, job, pool, gpu string, pid uint32, active float32, d time.Duration) {
	t.Helper()
	base := schemas.JobEvent{Job: job, Cluster: "c1", Source: schemas.SourceKubernetes, Attempt: 1}
	sub, st := base, base
	sub.TimeMs, sub.Event, sub.Team, sub.Project, sub.Pool, sub.GPUs = t0.Add(-time.Minute).UnixMilli(), schemas.EventSubmit, "ml", "p", pool, 1
	sub.Workload = schemas.WorkloadTraining
	st.TimeMs, st.Event, st.Nodes, st.GPUUUIDs = t0.UnixMilli(), schemas.EventStart, []string{"n1"}, []string{gpu}
	if err := l.AddJobs(t.Context(), []schemas.JobEvent{sub, st}); err != nil {
		t.Fatal(err)
	}
	for at := t0; at.Before(t0.Add(d)); at = at.Add(30 * time.Second) {
		s := schemas.NewGPUSample()
		s.TimeMs, s.GPUUUID, s.Card, s.Model, s.FBTotalMiB, s.FBUsedMiB = at.UnixMilli(), gpu, "H100-80GB", "NVIDIA H100 80GB HBM3", 81559, 20000
		s.GrEngineActive, s.SMActive, s.DRAMActive, s.GPUUtil = active, active, active/2, active
		s.PCIeRxBytesPerS, s.PCIeTxBytesPerS, s.PowerW = 0, 0, 100
		b := &schemas.SampleBatch{Cluster: "c1", Node: "n1", GPUs: []schemas.GPUSample{s},
			Processes: []schemas.ProcessSample{{TimeMs: s.TimeMs, GPUUUID: gpu, PID: pid, ProcessName: "python3", Job: job, FBUsedMiB: 20000, SMUtil: active}}}
		if err := l.AddSamples(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestServicePasses(t *testing.T) {
	s := newStore(t)
	l := ingest.NewLoader(s, 100000)
	loadJob(t, l, "k8s/ml/idle", "dev", "GPU-idle", 100, 0, time.Hour)
	loadJob(t, l, "k8s/ml/busy", "training-exp", "GPU-busy", 200, 0.9, time.Hour)

	reg := prometheus.NewRegistry()
	svc, err := New(DefaultConfig(), s, WithMetrics(NewMetrics(reg)))
	if err != nil {
		t.Fatal(err)
	}
	var last PassResult
	for at := t0.Add(5 * time.Minute); !at.After(t0.Add(time.Hour)); at = at.Add(5 * time.Minute) {
		if last, err = svc.Pass(t.Context(), at); err != nil {
			t.Fatalf("pass at %s: %v", at, err)
		}
	}
	if got := testutil.ToFloat64(svc.metrics.passes.WithLabelValues("ok")); got != 12 {
		t.Errorf("passes ok = %v, want 12", got)
	}
	if got := testutil.ToFloat64(svc.metrics.raised.WithLabelValues("idle")); got != 1 {
		t.Errorf("idle findings raised = %v, want 1", got)
	}
	if got := testutil.ToFloat64(svc.metrics.findingsOpen.WithLabelValues("idle")); got != 1 || last.OpenByKind[schemas.KindIdle] != 1 {
		t.Errorf("idle findings open = %v (%v), want 1", got, last.OpenByKind)
	}
	if got := testutil.ToFloat64(svc.metrics.priceProblems); got != 0 {
		t.Errorf("price book problems = %v, want 0: %v", got, last.PriceProblems)
	}
	util := map[string]PoolUtilisation{}
	for _, u := range last.Utilisation {
		util[u.Pool+"/"+u.Card] = u
	}
	busy, idle := util["training-exp/H100-80GB"], util["dev/H100-80GB"]
	if busy.Ratio < 0.99 || idle.Ratio > 0.01 || math.Abs(busy.AllocatedGPUs-1) > 0.01 || math.Abs(idle.AllocatedGPUs-1) > 0.01 {
		t.Errorf("utilisation: busy %+v idle %+v", busy, idle)
	}
	if got := testutil.ToFloat64(svc.metrics.poolUtilisation.WithLabelValues("training-exp", "H100-80GB")); got < 0.99 {
		t.Errorf("gpupool_pool_utilisation_ratio{training-exp,H100-80GB} = %v", got)
	}
	fs, err := svc.Findings(t.Context(), t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Job != "k8s/ml/idle" || fs[0].WasteCost <= 0 || fs[0].Currency != "USD" {
		t.Errorf("findings: %+v", fs)
	}
	// The refresh ran: the finance views hold the closed hour.
	res, err := s.Query(t.Context(), "SELECT round(sum(gpu_hours), 3) AS h FROM chargeback_daily", nil)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := res.Float(0, "h"); math.Abs(h-2) > 0.02 {
		t.Errorf("chargeback_daily gpu_hours = %v, want 2 (two GPUs for the hour)", h)
	}
	if err := svc.Ready(); err != nil {
		t.Errorf("ready after good passes: %v", err)
	}
	if n, err := testutil.GatherAndCount(reg, "gpupool_analyzer_pass_duration_seconds"); err != nil || n != 1 {
		t.Errorf("pass duration histogram: %d, %v", n, err)
	}
}

// failingStore fails every query, or those containing match when it is set, while
// failing is set.
type failingStore struct {
	store.Store
	match   string
	failing atomic.Bool
}

var errStoreDown = errors.New("store down")

func (f *failingStore) Query(ctx context.Context, sql string, p store.Params) (*store.Result, error) {
	if f.failing.Load() && strings.Contains(sql, f.match) {
		return nil, errStoreDown
	}
	return f.Store.Query(ctx, sql, p)
}

// TestDetectorSuccess: a detector whose query fails shows 0 in
// gpupool_analyzer_detector_success while the others show 1, and 1 again once it
// runs.
func TestDetectorSuccess(t *testing.T) {
	// The zombie detector's candidates query is the only one grouping jobs so.
	s := &failingStore{Store: newStore(t), match: "groupUniqArray(job) AS jobs"}
	loadJob(t, ingest.NewLoader(s, 100000), "k8s/ml/idle", "dev", "GPU-idle", 100, 0, time.Hour)
	reg := prometheus.NewRegistry()
	svc, err := New(DefaultConfig(), s, WithMetrics(NewMetrics(reg)))
	if err != nil {
		t.Fatal(err)
	}
	success := func() map[schemas.FindingKind]float64 {
		out := map[schemas.FindingKind]float64{}
		for _, k := range schemas.FindingKinds {
			out[k] = testutil.ToFloat64(svc.metrics.detectorSuccess.WithLabelValues(string(k)))
		}
		return out
	}
	s.failing.Store(true)
	if _, err := svc.Pass(t.Context(), t0.Add(time.Hour)); !errors.Is(err, findings.ErrDetector) || !errors.Is(err, errStoreDown) {
		t.Fatalf("pass error %v, want ErrDetector wrapping the store's", err)
	}
	want := map[schemas.FindingKind]float64{schemas.KindIdle: 1, schemas.KindZombie: 0, schemas.KindHung: 1, schemas.KindMemoryBound: 1,
		schemas.KindMemoryCapacity: 1, schemas.KindWrongCard: 1, schemas.KindLowUtil: 1, schemas.KindComputeBound: 1}
	if got := success(); !maps.Equal(got, want) {
		t.Errorf("with the zombie query failing: %v, want %v", got, want)
	}
	s.failing.Store(false)
	if _, err := svc.Pass(t.Context(), t0.Add(time.Hour+5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	want[schemas.KindZombie] = 1
	if got := success(); !maps.Equal(got, want) {
		t.Errorf("after a good pass: %v, want %v", got, want)
	}
	if n, err := testutil.GatherAndCount(reg, "gpupool_analyzer_detector_success"); err != nil || n != len(schemas.FindingKinds) {
		t.Errorf("detector success series: %d, %v", n, err)
	}
}

// TestRunKeepsGoing: a failed pass is counted and logged, the next pass runs, and
// Run returns when its context ends.
func TestRunKeepsGoing(t *testing.T) {
	// No samples: Run passes at the wall clock's now, and a refresh over the
	// months since t0 would take minutes.
	s := &failingStore{Store: newStore(t)}
	s.failing.Store(true)
	cfg := DefaultConfig()
	cfg.Interval = 10 * time.Millisecond
	svc, err := New(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var passes, failed int
	svc.onPass = func(_ PassResult, err error) {
		passes++
		if err != nil {
			failed++
			if !errors.Is(err, errStoreDown) {
				t.Errorf("pass error %v does not wrap the store's", err)
			}
			if svc.Ready() == nil {
				t.Error("ready after a failed pass")
			}
			s.failing.Store(false)
		}
		if passes == 3 {
			cancel()
		}
	}
	if err := svc.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if passes != 3 || failed != 1 {
		t.Errorf("passes %d, failed %d; want 3 and 1", passes, failed)
	}
	if got := testutil.ToFloat64(svc.metrics.passes.WithLabelValues("error")); got != 1 {
		t.Errorf("passes_total{result=error} = %v", got)
	}
	if err := svc.Ready(); err != nil {
		t.Errorf("not ready after a good pass: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"default", func(*Config) {}, ""},
		{"zero interval", func(c *Config) { c.Interval = 0 }, "interval: must be positive"},
		{"interval past resolve_after", func(c *Config) { c.Interval = time.Hour }, "findings.resolve_after"},
		{"two intervals", func(c *Config) { c.Findings.Interval = time.Minute }, "findings.interval"},
		{"price window", func(c *Config) { c.PriceCheckWindow = 0 }, "price_check_window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.want))):
				t.Errorf("error %v does not name %q", err, tt.want)
			}
		})
	}
}
