package collector

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// exposition is an endpoint whose body the test sets between scrapes.
type exposition struct {
	mu     sync.Mutex
	status int
	body   string
}

func (e *exposition) set(status int, body string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status, e.body = status, body
}

func (e *exposition) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	w.WriteHeader(e.status)
	_, _ = w.Write([]byte(e.body))
}

func vllmExposition(t *testing.T, small, large string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/exposition/vllm.prom")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "500000.0", small, 1)
	return strings.Replace(s, "250000.0", large, 1)
}

func testScraper(t *testing.T, logs *bytes.Buffer) *outputScraper {
	t.Helper()
	cfg := DefaultConfig().Output
	return newOutputScraper(cfg, slog.New(slog.NewTextHandler(logs, nil)), NewMetrics(nil))
}

// TestOutputScrape follows a vLLM server's generation-token counter (two
// series) over scrapes against a real HTTP server: increases add up, a restart
// of the server (its counter back near 0) counts what it counted since, and a
// failing or garbled endpoint leaves the total as it was, with a log line.
func TestOutputScrape(t *testing.T) {
	exp := &exposition{}
	srv := httptest.NewServer(exp)
	defer srv.Close()
	var logs bytes.Buffer
	s := testScraper(t, &logs)
	target := OutputTarget{URL: srv.URL + "/metrics", Metric: "vllm:generation_tokens_total", Unit: "tokens"}
	s.watch("k8s/inference/pod-1", target)
	ctx := t.Context()

	steps := []struct {
		name      string
		status    int
		body      string
		want      float64
		wantOK    bool
		wantInLog string
	}{
		{"endpoint not up yet", http.StatusServiceUnavailable, "starting", 0, false, "503 Service Unavailable"},
		{"first scrape counts from 0", http.StatusOK, vllmExposition(t, "500000.0", "250000.0"), 750000, true, ""},
		{"increase", http.StatusOK, vllmExposition(t, "500100.0", "250000.0"), 750100, true, ""},
		{"server restarted: counters reset", http.StatusOK, vllmExposition(t, "40.0", "2.0"), 750142, true, ""},
		{"garbled", http.StatusOK, "vllm:generation_tokens_total{model_name=\"x\" 12\n", 750142, true, "output counter unreadable"},
		{"metric gone", http.StatusOK, "# TYPE other_total counter\nother_total 1\n", 750142, true, "has no metric vllm:generation_tokens_total"},
		{"after the outage", http.StatusOK, vllmExposition(t, "50.0", "2.0"), 750152, true, ""},
	}
	for _, st := range steps {
		logs.Reset()
		exp.set(st.status, st.body)
		s.scrapeAll(ctx)
		got, ok := s.total("k8s/inference/pod-1")
		if ok != st.wantOK || got != st.want {
			t.Errorf("%s: total %v (%v), want %v (%v)", st.name, got, ok, st.want, st.wantOK)
		}
		if st.wantInLog != "" && !strings.Contains(logs.String(), st.wantInLog) {
			t.Errorf("%s: log %q does not say %q", st.name, logs.String(), st.wantInLog)
		}
		if st.wantInLog == "" && logs.Len() > 0 {
			t.Errorf("%s: unexpected log %q", st.name, logs.String())
		}
	}
	s.forget("k8s/inference/pod-1")
	if _, ok := s.total("k8s/inference/pod-1"); ok {
		t.Error("a forgotten job still has a total")
	}
}

// TestOutputNeverScraped: a job whose endpoint never answers has no output at
// all, not 0.
func TestOutputNeverScraped(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	var logs bytes.Buffer
	s := testScraper(t, &logs)
	s.watch("j", OutputTarget{URL: url + "/metrics", Metric: "steps_total", Unit: "steps"})
	for range 3 {
		s.scrapeAll(t.Context())
	}
	if v, ok := s.total("j"); ok {
		t.Fatalf("total %v reported for an endpoint that never answered", v)
	}
	if !strings.Contains(logs.String(), "output counter scrape failed") || !strings.Contains(logs.String(), url) {
		t.Errorf("log does not name the failed endpoint: %q", logs.String())
	}
}

func TestParseCounter(t *testing.T) {
	tests := []struct {
		name, body, metric string
		want               map[string]float64
		wantErr            string
	}{
		{"untyped, _total added", "steps_total 12\n", "steps", map[string]float64{"": 12}, ""},
		{"labels sorted into the key", "# TYPE s_total counter\ns_total{b=\"2\",a=\"1\"} 3\n", "s_total", map[string]float64{"a=1,b=2": 3}, ""},
		{"gauge refused", "# TYPE q gauge\nq 1\n", "q", nil, "is a gauge, not a counter"},
		{"histogram refused", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", "h", nil, "is a histogram"},
		{"negative", "c_total -1\n", "c_total", nil, "not a count"},
		{"NaN", "c_total NaN\n", "c_total", nil, "not a count"},
		{"garbage", "{{{\n", "c_total", nil, "output counter unreadable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCounter(strings.NewReader(tt.body), tt.metric)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrNoOutput) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrNoOutput saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("series %q: %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func FuzzParseCounter(f *testing.F) {
	b, err := os.ReadFile("testdata/exposition/vllm.prom")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, "vllm:generation_tokens_total")
	f.Add([]byte("a_total 1\n"), "a")
	f.Fuzz(func(t *testing.T, data []byte, metric string) {
		series, err := parseCounter(bytes.NewReader(data), metric)
		if err != nil {
			if !errors.Is(err, ErrNoOutput) {
				t.Fatalf("error %v does not wrap ErrNoOutput", err)
			}
			return
		}
		for k, v := range series {
			if v < 0 || v != v {
				t.Fatalf("series %q has %v", k, v)
			}
		}
	})
}

func TestOutputConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  OutputConfig
		want string
	}{
		{OutputConfig{}, ""},
		{DefaultConfig().Output, ""},
		{OutputConfig{Interval: time.Millisecond, Timeout: time.Millisecond, ReportEvery: time.Second}, "output.interval"},
		{OutputConfig{Interval: time.Second, Timeout: 2 * time.Second, ReportEvery: time.Second}, "output.timeout"},
		{OutputConfig{Interval: time.Minute, Timeout: time.Second, ReportEvery: time.Second}, "output.report_every"},
	} {
		err := c.cfg.validate()
		if (c.want == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
