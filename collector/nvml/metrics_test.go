package nvml

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// value reads a gauge's or counter's current value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Gauge != nil {
		return d.Gauge.GetValue()
	}
	return d.Counter.GetValue()
}

// series counts the series a collector exposes.
func series(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }()
	n := 0
	for range ch {
		n++
	}
	return n
}

func TestMetricsRegister(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	m.unsupported.WithLabelValues("GPU-x", fieldEnergy.String()).Set(1)
	m.callErrors.WithLabelValues("PowerUsage", errUnknown.Error()).Inc()
	m.gpusLost.Set(1)
	m.xids.WithLabelValues("GPU-x").Inc()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"gpupool_nvml_field_unsupported", "gpupool_nvml_call_errors_total", "gpupool_nvml_gpus_lost", "gpupool_nvml_xid_events_total"} {
		if !names[n] {
			t.Errorf("%s not registered", n)
		}
	}
	if NewMetrics(nil) == nil {
		t.Error("unregistered metrics")
	}
}

func TestFieldNames(t *testing.T) {
	for f := fieldFB; f <= fieldXID; f++ {
		if f.String() == "" {
			t.Errorf("field %d has no name", f)
		}
	}
}
