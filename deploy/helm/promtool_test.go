package helm

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// noPrometheusEnv, set to 1, lets these tests skip without promtool (as
// internal/testservers.NoPrometheusEnv; deploy's tests cannot import internal/).
const noPrometheusEnv = "GPUPOOL_TEST_NO_PROMETHEUS"

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv(noPrometheusEnv) == "1" {
		t.Skipf("promtool not found and %s=1", noPrometheusEnv)
	}
	t.Fatalf(`promtool not found: run "make deps" (it installs the Debian package prometheus) or "apt-get install prometheus", or set %s=1 to skip`, noPrometheusEnv)
	return ""
}

// rulesFile writes the PrometheusRule's groups, as rendered for c, to a rules file
// in dir and returns its path.
func rulesFile(t *testing.T, c renderCase, dir string) string {
	t.Helper()
	o, ok := find(render(t, c), "PrometheusRule", "gpupool")
	if !ok {
		t.Fatalf("%s: no PrometheusRule", c.name)
	}
	spec, _ := o.doc["spec"].(map[string]any)
	b, err := yaml.Marshal(map[string]any{"groups": spec["groups"]})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPromtoolCheckRules has promtool check the alert rules as each values case
// renders them: PromQL, durations, templates.
func TestPromtoolCheckRules(t *testing.T) {
	pt := promtool(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := rulesFile(t, c, t.TempDir())
			if out, err := exec.Command(pt, "check", "rules", p).CombinedOutput(); err != nil {
				t.Errorf("promtool check rules: %v\n%s", err, out)
			}
		})
	}
}

// TestPromtoolAlertRules runs testdata/alerts_test.yml, promtool unit tests of
// every alert: each fires on its condition and not otherwise, with the text it
// renders. An alert without a test there fails this test.
func TestPromtoolAlertRules(t *testing.T) {
	pt := promtool(t)
	dir := t.TempDir()
	rulesFile(t, cases[0], dir)
	tests, err := os.ReadFile("testdata/alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(pt, "test", "rules", filepath.Join(dir, "alerts_test.yml")).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules testdata/alerts_test.yml: %v\n%s", err, out)
	}
	rules, err := os.ReadFile(filepath.Join(dir, "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	alerts := regexp.MustCompile(`(?m)^\s*(?:- )?alert: (\w+)`).FindAllSubmatch(rules, -1)
	tested := regexp.MustCompile(`(?m)^\s*- alertname: (\w+)`).FindAllSubmatch(tests, -1)
	var names []string
	for _, m := range tested {
		names = append(names, string(m[1]))
	}
	if len(alerts) == 0 {
		t.Fatal("no alert in the rendered rules")
	}
	for _, a := range alerts {
		if !slices.Contains(names, string(a[1])) {
			t.Errorf("alert %s has no promtool unit test in testdata/alerts_test.yml", a[1])
		}
	}
}
