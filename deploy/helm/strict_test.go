package helm

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
	sigsyaml "sigs.k8s.io/yaml"
)

// strictSerializer decodes YAML into client-go's typed objects and fails on a
// field the type does not have, or a field given twice.
var strictSerializer = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	json.SerializerOptions{Yaml: true, Strict: true})

// decode decodes o strictly: a built-in kind through client-go's scheme, one of the
// custom resources the chart renders into its minimal type (crd_test.go).
func decode(o object) (runtime.Object, error) {
	switch o.kind() {
	case "ServiceMonitor":
		var v ServiceMonitor
		return nil, sigsyaml.UnmarshalStrict(o.raw, &v)
	case "PrometheusRule":
		var v PrometheusRule
		return nil, sigsyaml.UnmarshalStrict(o.raw, &v)
	case "ClickHouseInstallation":
		var v ClickHouseInstallation
		return nil, sigsyaml.UnmarshalStrict(o.raw, &v)
	}
	obj, _, err := strictSerializer.Decode(o.raw, nil, nil)
	return obj, err
}

// TestStrictDecode decodes every rendered object of every case strictly.
func TestStrictDecode(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, o := range render(t, c) {
				if _, err := decode(o); err != nil {
					t.Errorf("%v: %v", o, err)
				}
			}
		})
	}
}

// TestStrictDecodeCatchesUnknownFields makes sure the strict decoding above would
// catch a misspelt field in a built-in kind and in a custom resource.
func TestStrictDecodeCatchesUnknownFields(t *testing.T) {
	for _, raw := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndatta: {}\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: x}\nspec: {groups: [{name: g, rules: [{alert: A, expr: up, fro: 5m}]}]}\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {endpoint: []}\n",
		"apiVersion: clickhouse.altinity.com/v1\nkind: ClickHouseInstallation\nmetadata: {name: x}\nspec: {configuration: {cluster: []}}\n",
	} {
		o := object{source: "test", raw: []byte(raw)}
		if err := sigsyaml.Unmarshal(o.raw, &o.doc); err != nil {
			t.Fatal(err)
		}
		if _, err := decode(o); err == nil {
			t.Errorf("%v decoded without error:\n%s", o, raw)
		}
	}
}

// pod is a rendered pod template decoded into client-go's type.
type pod struct {
	owner string
	spec  corev1.PodSpec
}

func pods(t *testing.T, objs []object) []pod {
	t.Helper()
	var out []pod
	for _, o := range objs {
		obj, err := decode(o)
		if err != nil {
			t.Fatalf("%v: %v", o, err)
		}
		var spec *corev1.PodTemplateSpec
		switch v := obj.(type) {
		case *appsv1.Deployment:
			spec = &v.Spec.Template
		case *appsv1.DaemonSet:
			spec = &v.Spec.Template
		case *batchv1.Job:
			spec = &v.Spec.Template
		}
		if spec != nil {
			out = append(out, pod{owner: o.String(), spec: spec.Spec})
		}
	}
	return out
}

// TestContainerInvariants checks every container of every case: CPU and memory
// requests and limits, non-root (the collector's node agent, which must signal
// other users' processes, the one allowed exception), a read-only root
// filesystem, no privilege escalation, no capability beyond the agent's, and
// every volume mount backed by a volume of the pod.
func TestContainerInvariants(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := pods(t, render(t, c))
			if len(ps) == 0 {
				t.Fatal("no pods")
			}
			for _, p := range ps {
				agent := strings.Contains(p.owner, "DaemonSet gpupool-collector") && slices.Contains(p.spec.Containers[0].Args, "--agent-public-key-file=/etc/gpupool/agent/public.pem")
				vols := map[string]bool{}
				for _, v := range p.spec.Volumes {
					vols[v.Name] = true
				}
				for _, ctr := range append(append([]corev1.Container{}, p.spec.InitContainers...), p.spec.Containers...) {
					where := fmt.Sprintf("%s container %s", p.owner, ctr.Name)
					for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
						req, okReq := ctr.Resources.Requests[r]
						lim, okLim := ctr.Resources.Limits[r]
						if !okReq || !okLim {
							t.Errorf("%s: %s request and limit required (have %v, %v)", where, r, ctr.Resources.Requests, ctr.Resources.Limits)
						} else if req.Cmp(lim) > 0 {
							t.Errorf("%s: %s request %s above its limit %s", where, r, req.String(), lim.String())
						}
					}
					sc := ctr.SecurityContext
					if sc == nil {
						t.Errorf("%s: no securityContext", where)
						continue
					}
					nonRoot := boolOf(sc.RunAsNonRoot, p.spec.SecurityContext != nil && boolOf(p.spec.SecurityContext.RunAsNonRoot, false))
					uid := int64(-1)
					if p.spec.SecurityContext != nil && p.spec.SecurityContext.RunAsUser != nil {
						uid = *p.spec.SecurityContext.RunAsUser
					}
					if sc.RunAsUser != nil {
						uid = *sc.RunAsUser
					}
					switch {
					case agent && uid != 0:
						t.Errorf("%s: the node agent runs as uid %d; it signals other users' processes and needs root", where, uid)
					case !agent && (!nonRoot || uid == 0):
						t.Errorf("%s: runAsNonRoot %v, uid %d: want non-root", where, nonRoot, uid)
					}
					if !boolOf(sc.ReadOnlyRootFilesystem, false) {
						t.Errorf("%s: readOnlyRootFilesystem not set", where)
					}
					if boolOf(sc.AllowPrivilegeEscalation, true) || boolOf(sc.Privileged, false) {
						t.Errorf("%s: privilege escalation or privileged allowed", where)
					}
					if sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
						t.Errorf("%s: capabilities do not drop ALL", where)
					}
					if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
						if !agent || fmt.Sprint(sc.Capabilities.Add) != "[KILL SYS_PTRACE]" {
							t.Errorf("%s: adds capabilities %v", where, sc.Capabilities.Add)
						}
					}
					for _, m := range ctr.VolumeMounts {
						if !vols[m.Name] {
							t.Errorf("%s: mount %s has no volume", where, m.Name)
						}
					}
				}
			}
		})
	}
}

func boolOf(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// TestCollectorOnGPUNodes checks the DaemonSet reaches the GPU nodes and what
// the collector needs there: the nvidia.com/gpu taint tolerated, the NVIDIA
// runtime class, the host PID namespace, and DCGM's address when one is given.
func TestCollectorOnGPUNodes(t *testing.T) {
	objs := render(t, renderCase{name: "dcgm", set: map[string]any{"collector": map[string]any{"dcgmAddress": "nvidia-dcgm.gpu-operator.svc:5555"}}})
	var ds *appsv1.DaemonSet
	for _, o := range objs {
		if o.kind() == "DaemonSet" {
			obj, err := decode(o)
			if err != nil {
				t.Fatal(err)
			}
			ds = obj.(*appsv1.DaemonSet)
		}
	}
	if ds == nil {
		t.Fatal("no DaemonSet")
	}
	spec := ds.Spec.Template.Spec
	if spec.RuntimeClassName == nil || *spec.RuntimeClassName != "nvidia" {
		t.Errorf("runtimeClassName = %v, want nvidia", spec.RuntimeClassName)
	}
	if !spec.HostPID {
		t.Error("hostPID off: the collector could not read the GPU processes' /proc")
	}
	if spec.NodeSelector["nvidia.com/gpu.present"] != "true" {
		t.Errorf("nodeSelector = %v", spec.NodeSelector)
	}
	tolerated := false
	for _, tol := range spec.Tolerations {
		tolerated = tolerated || (tol.Key == "nvidia.com/gpu" && tol.Operator == corev1.TolerationOpExists)
	}
	if !tolerated {
		t.Errorf("tolerations %v do not tolerate nvidia.com/gpu", spec.Tolerations)
	}
	if !slices.Contains(spec.Containers[0].Args, "--dcgm-address=nvidia-dcgm.gpu-operator.svc:5555") {
		t.Errorf("args %v lack --dcgm-address", spec.Containers[0].Args)
	}
}

// metricsGolden lists every metric family the components register (written by
// internal/metricstest, which fails when it is stale).
const metricsGolden = "../../internal/metricstest/testdata/metrics.golden"

var metricName = regexp.MustCompile(`\b(gpupool_[a-z0-9_]+|up)\b`)

// TestAlertRulesNameRealMetrics checks every alert expression names only metrics
// gpupool registers (or up), and that the four the issue asks for are there.
func TestAlertRulesNameRealMetrics(t *testing.T) {
	data, err := os.ReadFile(metricsGolden)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"up": true}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ := strings.Cut(rest, " ")
			known[name] = true
		}
	}
	o, ok := find(render(t, cases[0]), "PrometheusRule", "gpupool")
	if !ok {
		t.Fatal("no PrometheusRule")
	}
	var pr PrometheusRule
	if err := sigsyaml.UnmarshalStrict(o.raw, &pr); err != nil {
		t.Fatal(err)
	}
	alerts := map[string]bool{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = true
			names := metricName.FindAllString(r.Expr, -1)
			if len(names) == 0 {
				t.Errorf("%s: expression %q names no metric", r.Alert, r.Expr)
			}
			for _, n := range names {
				if !known[n] {
					t.Errorf("%s: %s is not a metric gpupool registers (%s)", r.Alert, n, metricsGolden)
				}
			}
			if r.Labels["severity"] == "" {
				t.Errorf("%s: no severity label", r.Alert)
			}
		}
	}
	for _, want := range []string{"GpupoolIngestLag", "GpupoolDeadLetters", "GpupoolSpoolDropping", "GpupoolCollectorDown"} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}
}
