package attribution

import (
	"strings"
	"testing"

	"github.com/gpupool/gpupool/collector"
)

func TestOutputTarget(t *testing.T) {
	tests := []struct {
		name    string
		keys    map[string]string
		host    string
		want    collector.OutputTarget
		wantErr string
	}{
		{"none named", map[string]string{"app": "x"}, "10.0.0.1", collector.OutputTarget{}, ""},
		{"own port wins over prometheus.io/port", map[string]string{
			KeyOutputMetric: "vllm:generation_tokens_total", KeyOutputPort: "9400", KeyPromPort: "8000",
		}, "10.0.0.1", collector.OutputTarget{URL: "http://10.0.0.1:9400/metrics", Metric: "vllm:generation_tokens_total", Unit: "tokens"}, ""},
		{"path and unit given", map[string]string{
			KeyOutputMetric: "trainer_seen_total", KeyPromPort: "8080", KeyPromPath: "/stats/prom", KeyOutputUnit: "samples",
		}, "127.0.0.1", collector.OutputTarget{URL: "http://127.0.0.1:8080/stats/prom", Metric: "trainer_seen_total", Unit: "samples"}, ""},
		{"unit from the name", map[string]string{KeyOutputMetric: "train_steps_total", KeyOutputPort: "1"}, "::1",
			collector.OutputTarget{URL: "http://[::1]:1/metrics", Metric: "train_steps_total", Unit: "steps"}, ""},
		{"unknown unit keeps the name", map[string]string{KeyOutputMetric: "widgets_total", KeyOutputPort: "80"}, "10.0.0.1",
			collector.OutputTarget{URL: "http://10.0.0.1:80/metrics", Metric: "widgets_total", Unit: "widgets"}, ""},
		{"no port", map[string]string{KeyOutputMetric: "a_total"}, "10.0.0.1", collector.OutputTarget{}, "no gpupool.io/output-port or prometheus.io/port"},
		{"bad port", map[string]string{KeyOutputMetric: "a_total", KeyPromPort: "http"}, "10.0.0.1", collector.OutputTarget{}, `prometheus.io/port: "http" is not a port number`},
		{"port 0", map[string]string{KeyOutputMetric: "a_total", KeyOutputPort: "0"}, "10.0.0.1", collector.OutputTarget{}, "not a port number"},
		{"bad metric", map[string]string{KeyOutputMetric: "tokens-total", KeyOutputPort: "80"}, "10.0.0.1", collector.OutputTarget{}, "is not a Prometheus metric name"},
		{"bad path", map[string]string{KeyOutputMetric: "a_total", KeyOutputPort: "80", KeyOutputPath: "metrics"}, "10.0.0.1", collector.OutputTarget{}, "not an absolute URL path"},
		{"no address", map[string]string{KeyOutputMetric: "a_total", KeyOutputPort: "80"}, "node-a", collector.OutputTarget{}, "is not an IP address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := outputTarget(tt.keys, tt.host)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseComment(t *testing.T) {
	got := parseComment("nightly eval; gpupool.io/output-metric=eval_samples_total,gpupool.io/output-port=9100 x= =y")
	want := map[string]string{KeyOutputMetric: "eval_samples_total", KeyOutputPort: "9100"}
	if len(got) != len(want) || got[KeyOutputMetric] != want[KeyOutputMetric] || got[KeyOutputPort] != want[KeyOutputPort] {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestPodEndReason(t *testing.T) {
	term := func(r string) *termination { return &termination{Reason: r} }
	var running, oomBefore, errNow containerStatus
	oomBefore.LastState.Terminated = term("OOMKilled")
	errNow.State.Terminated = term("Error")
	for _, tt := range []struct {
		name string
		in   []containerStatus
		want string
	}{
		{"none", nil, ""},
		{"running", []containerStatus{running}, ""},
		{"error", []containerStatus{errNow, running}, "Error"},
		{"an earlier OOM kill wins over another container's error", []containerStatus{errNow, oomBefore}, "OOMKilled"},
	} {
		if got := podEndReason(tt.in); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestEndReason asks the kubelet again when a job ends (its container statuses
// change then), at most every KubeletMinRefresh, and names OOMKilled from a
// container's last termination.
func TestEndReason(t *testing.T) {
	kube := newKubeletServer(t)
	cfg := testConfig()
	kube.configure(&cfg)
	clock := newFakeClock()
	a, err := New(cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	info, err := a.Attribute(t.Context(), 1004) // pod D: its worker was OOM-killed before
	if err != nil {
		t.Fatal(err)
	}
	before := kube.requests.Load()
	clock.Advance(cfg.KubeletMinRefresh)
	if got := a.EndReason(t.Context(), info); got != (collector.JobEnd{Reason: "OOMKilled", Status: "failed", ExitCode: 137}) {
		t.Errorf("EndReason = %+v, want OOMKilled, failed, 137", got)
	}
	if n := kube.requests.Load() - before; n != 1 {
		t.Errorf("%d kubelet requests at the end, want 1 (a fresh pod list)", n)
	}
	if got := a.EndReason(t.Context(), info); got.Reason != "OOMKilled" || kube.requests.Load()-before != 1 {
		t.Errorf("asked again at once: %+v after %d requests, want the cached answer", got, kube.requests.Load()-before)
	}
	other, err := a.Attribute(t.Context(), 1001) // pod A: running, never terminated
	if err != nil {
		t.Fatal(err)
	}
	if got := a.EndReason(t.Context(), other); got != (collector.JobEnd{}) {
		t.Errorf("running pod: EndReason = %+v, want nothing", got)
	}
	if got := a.EndReason(t.Context(), collector.JobInfo{Job: "slurm/hpc1/1", EndReason: "kept"}); got != (collector.JobEnd{Reason: "kept"}) {
		t.Errorf("a Slurm job: %+v, want its own reason alone", got)
	}
}
