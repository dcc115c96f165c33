package collector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// OutputConfig configures scraping the output counters jobs name
// (JobInfo.Output).
type OutputConfig struct {
	// Interval is how often each job's endpoint is scraped; 0 turns scraping off.
	Interval time.Duration `yaml:"interval"`
	// Timeout bounds one scrape.
	Timeout time.Duration `yaml:"timeout"`
	// ReportEvery is how often a job's running total is sent (on a repeated start
	// event) while it runs; its end event always carries the last total.
	ReportEvery time.Duration `yaml:"report_every"`
}

// maxExpositionBytes bounds one scraped exposition (vLLM's is ~100 KB).
const maxExpositionBytes = 16 << 20

// ErrNoOutput says a job's output counter could not be read: its endpoint did not
// answer, answered garbage, or did not hold the counter. The job then reports no
// output (NULL, shown as "—"), never 0.
var ErrNoOutput = errors.New("output counter unreadable")

func (c OutputConfig) validate() error {
	switch {
	case c.Interval == 0:
		return nil
	case c.Interval < 100*time.Millisecond:
		return fmt.Errorf("output.interval: %s is below 100ms", c.Interval)
	case c.Timeout <= 0 || c.Timeout > c.Interval:
		return fmt.Errorf("output.timeout: %s must be positive and at most output.interval (%s)", c.Timeout, c.Interval)
	case c.ReportEvery < c.Interval:
		return fmt.Errorf("output.report_every: %s is shorter than output.interval (%s)", c.ReportEvery, c.Interval)
	}
	return nil
}

// outputCounter is a job's output so far: the increase of a counter summed over
// its series, counted from 0 when a series is first seen (the counter starts with
// the job's process) and across resets (a value below the last one means the
// process restarted and counted again from 0).
type outputCounter struct {
	last  map[string]float64 // series (its label pairs) → last value
	total float64
	ok    bool // a scrape has succeeded: total is a measurement
}

// add folds one scrape's series into the total.
func (o *outputCounter) add(series map[string]float64) {
	if o.last == nil {
		o.last = map[string]float64{}
	}
	for k, v := range series {
		prev, seen := o.last[k]
		switch {
		case !seen || v < prev:
			o.total += v
		default:
			o.total += v - prev
		}
		o.last[k] = v
	}
	for k := range o.last {
		if _, ok := series[k]; !ok {
			delete(o.last, k)
		}
	}
	o.ok = true
}

// parseCounter reads the series of metric (or metric_total) from a Prometheus
// text exposition. A metric the exposition does not hold, one that is not a
// counter (or untyped), a negative or non-finite value, and a malformed
// exposition are errors wrapping ErrNoOutput.
func parseCounter(r io.Reader, metric string) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoOutput, err)
	}
	fam := fams[metric]
	if fam == nil {
		fam = fams[metric+"_total"]
	}
	if fam == nil {
		return nil, fmt.Errorf("%w: the exposition has no metric %s (%d others)", ErrNoOutput, metric, len(fams))
	}
	if t := fam.GetType(); t != dto.MetricType_COUNTER && t != dto.MetricType_UNTYPED {
		return nil, fmt.Errorf("%w: %s is a %s, not a counter", ErrNoOutput, fam.GetName(), strings.ToLower(t.String()))
	}
	out := make(map[string]float64, len(fam.GetMetric()))
	for _, m := range fam.GetMetric() {
		v := m.GetCounter().GetValue()
		if fam.GetType() == dto.MetricType_UNTYPED {
			v = m.GetUntyped().GetValue()
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: %s has the value %g, not a count", ErrNoOutput, fam.GetName(), v)
		}
		pairs := make([]string, 0, len(m.GetLabel()))
		for _, l := range m.GetLabel() {
			pairs = append(pairs, l.GetName()+"="+l.GetValue())
		}
		slices.Sort(pairs)
		out[strings.Join(pairs, ",")] = v
	}
	return out, nil
}

// outputScraper scrapes the output counters of the jobs the collector tracks, on
// its own goroutine so that a slow endpoint never delays a tick.
type outputScraper struct {
	cfg    OutputConfig
	client *http.Client
	log    *slog.Logger
	m      *Metrics

	mu      sync.Mutex
	targets map[string]OutputTarget
	state   map[string]*outputCounter
}

func newOutputScraper(cfg OutputConfig, log *slog.Logger, m *Metrics) *outputScraper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // jobs' endpoints are on this node's network
	return &outputScraper{
		cfg: cfg, client: &http.Client{Transport: tr, Timeout: cfg.Timeout}, log: log, m: m,
		targets: map[string]OutputTarget{}, state: map[string]*outputCounter{},
	}
}

// watch starts scraping job's counter; forget stops it and drops what it counted.
func (s *outputScraper) watch(job string, t OutputTarget) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.targets[job]; !ok {
		s.targets[job] = t
		s.state[job] = &outputCounter{}
	}
}

func (s *outputScraper) forget(job string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.targets, job)
	delete(s.state, job)
}

// total returns job's output so far, and false while no scrape has succeeded.
func (s *outputScraper) total(job string) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state[job]
	if st == nil || !st.ok {
		return 0, false
	}
	return st.total, true
}

// run scrapes every Interval until ctx ends.
func (s *outputScraper) run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.scrapeAll(ctx)
		}
	}
}

// scrapeAll scrapes every watched job once. A failed scrape is logged, counted
// in gpupool_collector_output_scrapes_total{result="error"}, and leaves the job's
// total as it was.
func (s *outputScraper) scrapeAll(ctx context.Context) {
	s.mu.Lock()
	jobs := make(map[string]OutputTarget, len(s.targets))
	for k, v := range s.targets {
		jobs[k] = v
	}
	s.mu.Unlock()
	for job, t := range jobs {
		series, err := s.scrape(ctx, t)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.m.outputScrapes.WithLabelValues("error").Inc()
			s.log.Warn("output counter scrape failed; the job reports no output until one succeeds",
				"job", job, "url", t.URL, "metric", t.Metric, "err", err)
			continue
		}
		s.m.outputScrapes.WithLabelValues("ok").Inc()
		s.mu.Lock()
		if st := s.state[job]; st != nil {
			st.add(series)
		}
		s.mu.Unlock()
	}
}

func (s *outputScraper) scrape(ctx context.Context, t OutputTarget) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoOutput, err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %v", ErrNoOutput, t.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%w: GET %s: %s", ErrNoOutput, t.URL, resp.Status)
	}
	series, err := parseCounter(io.LimitReader(resp.Body, maxExpositionBytes), t.Metric)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", t.URL, err)
	}
	return series, nil
}
