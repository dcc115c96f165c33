package metricstest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/dcgm"
	"github.com/gpupool/gpupool/collector/nvml"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/reports/alerts"
	"github.com/gpupool/gpupool/reports/billing"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/daemon"
)

// Component is one set of metrics: a name for the golden file and the function
// that creates and registers them.
type Component struct {
	Name     string
	Register func(prometheus.Registerer)
}

// Components are every metric set gpupool serves, in the order of the data flow.
var Components = []Component{
	{"collector", func(r prometheus.Registerer) { collector.NewMetrics(r) }},
	{"collector/dcgm", func(r prometheus.Registerer) { dcgm.NewMetrics(r) }},
	{"collector/nvml", func(r prometheus.Registerer) { nvml.NewMetrics(r) }},
	{"ingest", func(r prometheus.Registerer) { ingest.NewMetrics(r) }},
	{"analyzer", func(r prometheus.Registerer) { analyzer.NewMetrics(r) }},
	{"scheduler", func(r prometheus.Registerer) { scheduler.NewMetrics(r) }},
	{"scheduler/daemon", func(r prometheus.Registerer) { daemon.NewMetrics(r) }},
	{"auth", func(r prometheus.Registerer) { auth.NewMetrics(r) }},
	{"reports/billing", func(r prometheus.Registerer) { billing.NewMetrics(r) }},
	{"reports/alerts", func(r prometheus.Registerer) { alerts.NewMetrics(r) }},
}

// Registry returns a pedantic registry holding the metrics of comps (every
// component when none are given), each vector with one series whose label values
// are the label names.
func Registry(comps ...Component) (*prometheus.Registry, error) {
	if len(comps) == 0 {
		comps = Components
	}
	reg := prometheus.NewPedanticRegistry()
	p := &populating{reg: reg}
	for _, c := range comps {
		if err := register(p, c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// register runs c.Register, turning a registration panic (a duplicate or invalid
// metric) into an error that names the component.
func register(p *populating, c Component) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("metricstest: register %s: %v", c.Name, r)
		}
	}()
	c.Register(p)
	return nil
}

// Gather returns the metric families of comps (every component when none are
// given).
func Gather(comps ...Component) ([]*dto.MetricFamily, error) {
	reg, err := Registry(comps...)
	if err != nil {
		return nil, err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("metricstest: gather: %w", err)
	}
	return mfs, nil
}

// Family is one metric family as a scrape shows it: name, type, help and label names.
type Family struct {
	Name   string
	Type   dto.MetricType
	Help   string
	Labels []string
}

// Families returns every component's metric families by name, with their label
// names (a histogram's le not included).
func Families() (map[string]Family, error) {
	mfs, err := Gather()
	if err != nil {
		return nil, err
	}
	out := make(map[string]Family, len(mfs))
	for _, mf := range mfs {
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		out[mf.GetName()] = Family{Name: mf.GetName(), Type: mf.GetType(), Help: mf.GetHelp(), Labels: slices.Sorted(maps.Keys(labels))}
	}
	return out, nil
}

// SeriesNames are the names a query may use for family f: the family itself, and
// for a histogram or summary its _bucket, _sum and _count series.
func SeriesNames(f Family) []string {
	switch f.Type {
	case dto.MetricType_HISTOGRAM:
		return []string{f.Name, f.Name + "_bucket", f.Name + "_sum", f.Name + "_count"}
	case dto.MetricType_SUMMARY:
		return []string{f.Name, f.Name + "_sum", f.Name + "_count"}
	}
	return []string{f.Name}
}

// Populating wraps reg: what is registered through it is registered with reg, and
// each metric vector gets one series, so that gathering or scraping shows it.
func Populating(reg prometheus.Registerer) prometheus.Registerer { return &populating{reg: reg} }

// populating is Populating's Registerer.
type populating struct{ reg prometheus.Registerer }

var _ prometheus.Registerer = (*populating)(nil)

func (p *populating) Register(c prometheus.Collector) error {
	if err := p.reg.Register(c); err != nil {
		return err
	}
	return populate(c)
}

func (p *populating) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := p.Register(c); err != nil {
			panic(err)
		}
	}
}

func (p *populating) Unregister(c prometheus.Collector) bool { return p.reg.Unregister(c) }

// populate creates one series in a metric vector (other collectors show their
// metrics without help).
func populate(c prometheus.Collector) error {
	var with func(...string) error
	switch v := c.(type) {
	case *prometheus.CounterVec:
		with = func(lv ...string) (err error) { _, err = v.GetMetricWithLabelValues(lv...); return err }
	case *prometheus.GaugeVec:
		with = func(lv ...string) (err error) { _, err = v.GetMetricWithLabelValues(lv...); return err }
	case *prometheus.HistogramVec:
		with = func(lv ...string) (err error) { _, err = v.GetMetricWithLabelValues(lv...); return err }
	case *prometheus.SummaryVec:
		with = func(lv ...string) (err error) { _, err = v.GetMetricWithLabelValues(lv...); return err }
	default:
		return nil
	}
	descs := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(descs); close(descs) }()
	for d := range descs {
		if err := with(variableLabels(d)...); err != nil {
			return fmt.Errorf("metricstest: %s: %w", d, err)
		}
	}
	return nil
}

// variableLabels reads a Desc's variable label names from its String form, the
// only place client_golang shows them.
func variableLabels(d *prometheus.Desc) []string {
	s := d.String()
	const key = "variableLabels: {"
	i := strings.LastIndex(s, key)
	if i < 0 {
		return nil
	}
	s = strings.TrimSuffix(s[i+len(key):], "}}")
	if s == "" {
		return nil
	}
	names := strings.Split(s, ",")
	for i, n := range names {
		// A constrained label shows as c(name).
		names[i] = strings.TrimSuffix(strings.TrimPrefix(n, "c("), ")")
	}
	return names
}
