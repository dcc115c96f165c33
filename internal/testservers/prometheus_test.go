package testservers

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gpupool/gpupool/internal/metricsserver"
	"github.com/gpupool/gpupool/internal/metricstest"
)

// TestPrometheusScrapesComponent has a real Prometheus scrape the metrics endpoint
// every command serves (metricsserver) on loopback, holding every component's
// metrics with a series each, and finds every series name in its query API.
func TestPrometheusScrapesComponent(t *testing.T) {
	reg, err := metricstest.Registry()
	if err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range fams {
		n := f.GetName()
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			want = append(want, n+"_bucket", n+"_count", n+"_sum")
		case dto.MetricType_SUMMARY:
			want = append(want, n, n+"_count", n+"_sum")
		default:
			want = append(want, n)
		}
	}
	addr := freeAddr(t)
	if err := metricsserver.Start(t.Context(), metricsserver.Config{Listen: addr}, reg, func() error { return nil }, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	p := StartPrometheus(t, "gpupool", []string{addr}, 200*time.Millisecond)
	up := p.WaitFor(t, `up{job="gpupool"} == 1`)
	if up[0].Metric["instance"] != addr {
		t.Errorf("up's instance = %q, want %q", up[0].Metric["instance"], addr)
	}
	got := p.WaitFor(t, `count by (__name__) ({job="gpupool", __name__=~"gpupool_.*"})`)
	var names []string
	for _, s := range got {
		names = append(names, s.Metric["__name__"])
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("Prometheus stored %d series names, want %d:\n got %v\nwant %v", len(names), len(want), names, want)
	}
}
