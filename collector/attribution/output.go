package attribution

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/gpupool/gpupool/collector"
)

// Keys a job names its output counter with: pod annotations, job labels (the
// mapping file's, a Slurm job's comment), all the same (docs/finance.md, "Output
// from a Prometheus counter").
const (
	// KeyOutputMetric names the counter ("vllm:generation_tokens_total").
	KeyOutputMetric = "gpupool.io/output-metric"
	// KeyOutputPort is the port of the job's metrics endpoint; KeyPromPort, the
	// usual scrape annotation, stands in when it is absent.
	KeyOutputPort = "gpupool.io/output-port"
	KeyPromPort   = "prometheus.io/port"
	// KeyOutputPath is the endpoint's path; KeyPromPath stands in, else /metrics.
	KeyOutputPath = "gpupool.io/output-path"
	KeyPromPath   = "prometheus.io/path"
	// KeyOutputUnit says what the counter counts; without it the unit is read
	// from the metric's name (tokens, samples, requests, steps).
	KeyOutputUnit = "gpupool.io/output-unit"
)

// outputTarget reads a job's output counter from keys (annotations or labels),
// at host. It returns a zero target when keys name no metric, and an error naming
// the key for a metric, port, path or host that cannot be scraped.
func outputTarget(keys map[string]string, host string) (collector.OutputTarget, error) {
	metric := strings.TrimSpace(keys[KeyOutputMetric])
	if metric == "" {
		return collector.OutputTarget{}, nil
	}
	if !model.LegacyValidation.IsValidMetricName(metric) {
		return collector.OutputTarget{}, fmt.Errorf("%s: %q is not a Prometheus metric name", KeyOutputMetric, metric)
	}
	portKey := KeyOutputPort
	port := strings.TrimSpace(keys[portKey])
	if port == "" {
		portKey, port = KeyPromPort, strings.TrimSpace(keys[KeyPromPort])
	}
	if port == "" {
		return collector.OutputTarget{}, fmt.Errorf("%s %q: no %s or %s says where the job's metrics endpoint listens", KeyOutputMetric, metric, KeyOutputPort, KeyPromPort)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return collector.OutputTarget{}, fmt.Errorf("%s: %q is not a port number (1..65535)", portKey, port)
	}
	path := strings.TrimSpace(keys[KeyOutputPath])
	if path == "" {
		path = strings.TrimSpace(keys[KeyPromPath])
	}
	if path == "" {
		path = "/metrics"
	}
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " ?#") {
		return collector.OutputTarget{}, fmt.Errorf("%s: %q is not an absolute URL path", KeyOutputPath, path)
	}
	if host == "" || net.ParseIP(host) == nil {
		return collector.OutputTarget{}, fmt.Errorf("%s %q: the job's address %q is not an IP address", KeyOutputMetric, metric, host)
	}
	unit := strings.TrimSpace(keys[KeyOutputUnit])
	if unit == "" {
		unit = unitOf(metric)
	}
	return collector.OutputTarget{
		URL: "http://" + net.JoinHostPort(host, port) + path, Metric: metric, Unit: unit,
	}, nil
}

// unitOf reads what a counter counts from its name: vllm:generation_tokens_total
// counts tokens.
func unitOf(metric string) string {
	name := strings.ToLower(metric)
	for _, u := range [...]struct{ word, unit string }{
		{"token", "tokens"}, {"sample", "samples"}, {"request", "requests"}, {"step", "steps"},
		{"image", "images"}, {"frame", "frames"},
	} {
		if strings.Contains(name, u.word) {
			return u.unit
		}
	}
	return strings.TrimSuffix(metric, "_total")
}

// parseComment reads a Slurm job comment's key=value pairs, separated by commas,
// semicolons or spaces ("gpupool.io/output-metric=vllm:generation_tokens_total,
// gpupool.io/output-port=8000"); words that are no such pair are the user's own
// text and are skipped.
func parseComment(s string) map[string]string {
	out := map[string]string{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' }) {
		k, v, ok := strings.Cut(f, "=")
		if ok && k != "" && v != "" {
			out[k] = v
		}
	}
	return out
}
