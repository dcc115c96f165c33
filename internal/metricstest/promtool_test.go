package metricstest_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"

	"github.com/gpupool/gpupool/internal/metricstest"
	"github.com/gpupool/gpupool/internal/testservers"
)

// TestPromtoolCheckMetrics has promtool lint each component's /metrics exposition
// (every metric with a series): names, units, suffixes, help text, label names.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := testservers.Promtool(t)
	for _, c := range metricstest.Components {
		t.Run(c.Name, func(t *testing.T) {
			reg, err := metricstest.Registry(c)
			if err != nil {
				t.Fatal(err)
			}
			fams, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
			for _, f := range fams {
				if err := enc.Encode(f); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = &buf
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "" {
				t.Errorf("promtool check metrics: %v\n%s", err, out)
			}
		})
	}
}
