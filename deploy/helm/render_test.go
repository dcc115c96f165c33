package helm

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
)

var update = flag.Bool("update", false, "rewrite testdata/*.yaml and the chart's dashboards from deploy/grafana")

const (
	chartDir    = "gpupool"
	releaseName = "gpupool"
	releaseNS   = "gpupool"
)

// object is one rendered manifest: the template it came from and its document.
type object struct {
	source string
	raw    []byte
	doc    map[string]any
}

func (o object) kind() string { s, _ := o.doc["kind"].(string); return s }
func (o object) name() string {
	m, _ := o.doc["metadata"].(map[string]any)
	s, _ := m["name"].(string)
	return s
}
func (o object) String() string { return o.source + ": " + o.kind() + " " + o.name() }

// renderCase is one set of values the chart is rendered with: values files over the
// chart's values.yaml, then set over those.
type renderCase struct {
	name   string
	files  []string
	set    map[string]any
	golden bool // kept in testdata/<name>.yaml for cmd/gpupool's tests
}

// cases are the shapes the chart is tested in.
var cases = []renderCase{
	{name: "default", golden: true},
	{name: "large", files: []string{"values-large.yaml"}, golden: true},
	{name: "everything", files: []string{"values-large.yaml"}, set: map[string]any{
		"console":    map[string]any{"enabled": true},
		"alerts":     map[string]any{"enabled": true, "slackTokenSecret": "slack"},
		"clickhouse": map[string]any{"password": "s3cret", "existingSecret": ""},
		"auth":       map[string]any{"tokens": []any{"ops admin sha256:" + strings.Repeat("ab", 32)}},
		"collector":  map[string]any{"agent": map[string]any{"enabled": true, "publicKeySecret": "agent-key"}, "spool": map[string]any{"hostPath": "/var/lib/gpupool/spool"}},
		"nats":       map[string]any{"credentials": map[string]any{"existingSecret": "nats-creds", "type": "nkey"}, "tls": map[string]any{"caSecret": "nats-ca"}},
	}},
	{name: "evict-namespaced", set: map[string]any{
		"config":    map[string]any{"scheduler": map[string]any{"kubernetes": map[string]any{"mode": "evict"}}},
		"scheduler": map[string]any{"rbac": map[string]any{"namespaces": []any{"team-a", "team-b"}}, "tls": map[string]any{"insecure": true}},
		"collector": map[string]any{"kubelet": map[string]any{"enabled": false}},
	}},
	{name: "suspend-job", set: map[string]any{
		"config": map[string]any{"scheduler": map[string]any{"kubernetes": map[string]any{"mode": "suspend_job"}}},
	}},
	{name: "kueue-workload", set: map[string]any{
		"config": map[string]any{"scheduler": map[string]any{"kubernetes": map[string]any{"mode": "kueue_workload"}}},
	}},
	{name: "no-kubernetes-executor", set: map[string]any{
		"config": map[string]any{"scheduler": map[string]any{"executor": "slurm"}},
	}},
}

// mergeValues sets src's keys into dst, recursing into maps (as helm's -f and --set do).
func mergeValues(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// render renders the chart as `helm template gpupool deploy/helm/gpupool -n gpupool
// -f FILE…` does, with the strict engine (a missing value is an error).
func render(t *testing.T, c renderCase) []object {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	vals := map[string]any{}
	for _, f := range c.files {
		v, err := common.ReadValuesFile(filepath.Join(chartDir, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		vals = mergeValues(vals, v)
	}
	vals = mergeValues(vals, c.set)
	top, err := util.ToRenderValues(chrt, vals, common.ReleaseOptions{Name: releaseName, Namespace: releaseNS, IsInstall: true, Revision: 1}, nil)
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	files, err := engine.Engine{Strict: true}.RenderWithContext(t.Context(), chrt, top)
	if err != nil {
		t.Fatalf("render %s: %v", c.name, err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []object
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for i, part := range splitDocs(files[n]) {
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(part), &doc); err != nil {
				t.Fatalf("%s: document %d is not YAML: %v\n%s", n, i, err, part)
			}
			if doc == nil {
				continue
			}
			out = append(out, object{source: strings.TrimPrefix(n, "gpupool/"), raw: []byte(part), doc: doc})
		}
	}
	if len(out) == 0 {
		t.Fatalf("render %s: no objects", c.name)
	}
	return out
}

// splitDocs splits a rendered template at its "---" lines.
func splitDocs(s string) []string {
	var docs []string
	var cur strings.Builder
	for line := range strings.Lines(s) {
		if strings.TrimRight(line, " \r\n") == "---" {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	return append(docs, cur.String())
}

// manifest is the render as `helm template` prints it: each object after a
// "# Source:" line.
func manifest(objs []object) []byte {
	var b bytes.Buffer
	for _, o := range objs {
		fmt.Fprintf(&b, "---\n# Source: gpupool/%s\n%s", o.source, strings.TrimLeft(string(o.raw), "\n"))
		if !bytes.HasSuffix(o.raw, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func find(objs []object, kind, name string) (object, bool) {
	for _, o := range objs {
		if o.kind() == kind && o.name() == name {
			return o, true
		}
	}
	return object{}, false
}

// TestRenderGolden keeps the default and large renders in testdata/, where
// cmd/gpupool's tests read them; a change to the chart shows in review as a
// change to what it renders.
func TestRenderGolden(t *testing.T) {
	for _, c := range cases {
		if !c.golden {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			got := manifest(render(t, c))
			path := filepath.Join("testdata", c.name+".yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./deploy/helm -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is stale: run go test ./deploy/helm -update and review the diff", path)
			}
		})
	}
}

// TestRenderedKinds checks each case renders the objects its values ask for, and
// only those.
func TestRenderedKinds(t *testing.T) {
	want := map[string][]string{
		"default": {"ConfigMap gpupool-config", "Secret gpupool-auth", "DaemonSet gpupool-collector", "ClusterRole gpupool-collector",
			"Deployment gpupool-ingest", "PodDisruptionBudget gpupool-ingest", "Deployment gpupool-analyzer", "Deployment gpupool-scheduler",
			"ClusterRole gpupool-scheduler", "ClusterRoleBinding gpupool-scheduler", "PersistentVolumeClaim gpupool-scheduler",
			"Deployment gpupool-reports", "Job gpupool-migrate", "ServiceMonitor gpupool", "PrometheusRule gpupool",
			"ConfigMap gpupool-dashboard-pool-overview"},
		"large":                  {"ClickHouseInstallation gpupool", "Deployment gpupool-alerts"},
		"everything":             {"Deployment gpupool-console", "Service gpupool-console", "Secret gpupool-clickhouse"},
		"evict-namespaced":       {"Role gpupool-scheduler", "RoleBinding gpupool-scheduler"},
		"no-kubernetes-executor": {"ServiceAccount gpupool-scheduler"},
	}
	absent := map[string][]string{
		"default":                {"ClickHouseInstallation gpupool", "Deployment gpupool-console", "Secret gpupool-clickhouse", "Deployment gpupool-alerts"},
		"evict-namespaced":       {"ClusterRole gpupool-scheduler", "ClusterRole gpupool-collector"},
		"no-kubernetes-executor": {"ClusterRole gpupool-scheduler", "Role gpupool-scheduler"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := render(t, c)
			for _, w := range want[c.name] {
				kind, name, _ := strings.Cut(w, " ")
				if _, ok := find(objs, kind, name); !ok {
					t.Errorf("no %s", w)
				}
			}
			for _, w := range absent[c.name] {
				kind, name, _ := strings.Cut(w, " ")
				if o, ok := find(objs, kind, name); ok {
					t.Errorf("%v rendered, want none", o)
				}
			}
		})
	}
}

// TestDashboardsAreDeployGrafanas checks the chart's dashboards/ is a copy of
// deploy/grafana/dashboards (Helm reads only files inside the chart); -update
// copies them.
func TestDashboardsAreDeployGrafanas(t *testing.T) {
	src, err := filepath.Glob("../grafana/dashboards/*.json")
	if err != nil || len(src) == 0 {
		t.Fatalf("no dashboards in deploy/grafana/dashboards: %v", err)
	}
	for _, s := range src {
		want, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(chartDir, "dashboards", filepath.Base(s))
		if *update {
			if err := os.WriteFile(dst, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(dst)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (run go test ./deploy/helm -update)", dst, s)
		}
	}
	copies, _ := filepath.Glob(filepath.Join(chartDir, "dashboards", "*.json"))
	if len(copies) != len(src) {
		t.Errorf("chart has %d dashboards, deploy/grafana %d", len(copies), len(src))
	}
	objs := render(t, cases[0])
	for _, s := range src {
		base := strings.TrimSuffix(filepath.Base(s), ".json")
		o, ok := find(objs, "ConfigMap", "gpupool-dashboard-"+base)
		if !ok {
			t.Errorf("no ConfigMap for dashboard %s", base)
			continue
		}
		md := o.doc["metadata"].(map[string]any)
		if l, _ := md["labels"].(map[string]any); l["grafana_dashboard"] != "1" {
			t.Errorf("%v: label grafana_dashboard = %v, want \"1\" (the sidecar's)", o, l["grafana_dashboard"])
		}
		data := o.doc["data"].(map[string]any)
		want, _ := os.ReadFile(s)
		if got, _ := data[filepath.Base(s)].(string); strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
			t.Errorf("%v: data differs from %s", o, s)
		}
	}
}

// TestChartFailsClearly checks values the chart cannot work with stop the render
// with a message naming the value.
func TestChartFailsClearly(t *testing.T) {
	for _, c := range []struct {
		name string
		set  map[string]any
		want string
	}{
		{"no clickhouse password", map[string]any{"clickhouse": map[string]any{"existingSecret": ""}}, "clickhouse.password or clickhouse.existingSecret"},
		{"no scheduler tls", map[string]any{"scheduler": map[string]any{"tls": map[string]any{"secretName": ""}}}, "scheduler.tls.secretName"},
		{"agent without key", map[string]any{"collector": map[string]any{"agent": map[string]any{"enabled": true}}}, "collector.agent.publicKeySecret"},
	} {
		t.Run(c.name, func(t *testing.T) {
			chrt, err := loader.Load(chartDir)
			if err != nil {
				t.Fatal(err)
			}
			top, err := util.ToRenderValues(chrt, c.set, common.ReleaseOptions{Name: releaseName, Namespace: releaseNS}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = engine.Engine{Strict: true}.RenderWithContext(t.Context(), chrt, top)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("render error = %v, want one naming %q", err, c.want)
			}
		})
	}
}

// TestMetricsServicesSelected checks every component's metrics Service has a
// port named metrics that the ServiceMonitor scrapes, selects pods the chart
// renders, and targets a container port of theirs.
func TestMetricsServicesSelected(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := render(t, c)
			sm, ok := find(objs, "ServiceMonitor", "gpupool")
			if !ok {
				t.Fatal("no ServiceMonitor")
			}
			smSel := nested(sm.doc, "spec", "selector", "matchLabels").(map[string]any)
			pods := podTemplates(objs)
			for _, o := range objs {
				if o.kind() != "Service" {
					continue
				}
				labels, _ := nested(o.doc, "metadata", "labels").(map[string]any)
				sel, _ := nested(o.doc, "spec", "selector").(map[string]any)
				var matched []podTemplate
				for _, p := range pods {
					if subset(sel, p.labels) {
						matched = append(matched, p)
					}
				}
				if len(matched) == 0 {
					t.Errorf("%v selects no pod of the chart", o)
					continue
				}
				ports, _ := nested(o.doc, "spec", "ports").([]any)
				for _, p := range ports {
					target := p.(map[string]any)["targetPort"]
					for _, m := range matched {
						if !slices.Contains(m.portNames, fmt.Sprint(target)) {
							t.Errorf("%v: targetPort %v is no port of %s", o, target, m.owner)
						}
					}
				}
				if labels["gpupool.io/metrics"] == "true" && !subset(smSel, labels) {
					t.Errorf("%v: the ServiceMonitor does not select it", o)
				}
			}
		})
	}
}

// nested walks maps by key; nil where a key is missing.
func nested(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func subset(sel, labels map[string]any) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// podTemplate is a workload's pod template, with what the checks need.
type podTemplate struct {
	owner     string
	labels    map[string]any
	spec      map[string]any
	portNames []string
}

func podTemplates(objs []object) []podTemplate {
	var out []podTemplate
	for _, o := range objs {
		switch o.kind() {
		case "Deployment", "DaemonSet", "StatefulSet", "Job":
		default:
			continue
		}
		tmpl, _ := nested(o.doc, "spec", "template").(map[string]any)
		labels, _ := nested(tmpl, "metadata", "labels").(map[string]any)
		spec, _ := tmpl["spec"].(map[string]any)
		p := podTemplate{owner: o.String(), labels: labels, spec: spec}
		for _, c := range containers(spec) {
			ports, _ := c["ports"].([]any)
			for _, port := range ports {
				pm := port.(map[string]any)
				p.portNames = append(p.portNames, fmt.Sprint(pm["name"]), fmt.Sprint(pm["containerPort"]))
			}
		}
		out = append(out, p)
	}
	return out
}

func containers(spec map[string]any) []map[string]any {
	var out []map[string]any
	for _, key := range []string{"initContainers", "containers"} {
		list, _ := spec[key].([]any)
		for _, c := range list {
			out = append(out, c.(map[string]any))
		}
	}
	return out
}
