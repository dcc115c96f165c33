package helm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/scheduler/executor/kubernetes/kubetest"
)

// kueueVersion is the Kueue whose Workload CRD the kueue_workload test installs
// (from the Go module cache; deploy/testservers/kube-apiserver.sh downloads it).
const kueueVersion = "v0.17.0"

// clients are one identity's typed and dynamic clients.
type clients struct {
	kube k8s.Interface
	dyn  dynamic.Interface
}

func newClients(t *testing.T, c *rest.Config) clients {
	t.Helper()
	kube, err := k8s.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return clients{kube, dyn}
}

// thirdPartyCRDs are stand-ins for the CRDs of the custom resources the chart
// renders (prometheus-operator's, Altinity's): they take any spec, so the
// server checks the objects' metadata and the apply, not their fields
// (crd_test.go decodes those strictly against the CRDs' Go types).
var thirdPartyCRDs = []struct{ group, kind, plural string }{
	{"monitoring.coreos.com", "ServiceMonitor", "servicemonitors"},
	{"monitoring.coreos.com", "PrometheusRule", "prometheusrules"},
	{"clickhouse.altinity.com", "ClickHouseInstallation", "clickhouseinstallations"},
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRD creates a CRD and waits until it is established.
func installCRD(t *testing.T, c clients, crd *unstructured.Unstructured) {
	t.Helper()
	// Created, not applied: Kueue's Workload CRD is 1.4 MB of schema, and the
	// managed fields of an apply would double it past etcd's request limit.
	if _, err := c.dyn.Resource(crdGVR).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CRD %s: %v", crd.GetName(), err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := c.dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, x := range conds {
			if m, ok := x.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD %s not established: %v", crd.GetName(), err)
	}
}

func installThirdPartyCRDs(t *testing.T, c clients) {
	t.Helper()
	for _, x := range thirdPartyCRDs {
		installCRD(t, c, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": x.plural + "." + x.group},
			"spec": map[string]any{
				"group": x.group, "scope": "Namespaced",
				"names": map[string]any{"kind": x.kind, "plural": x.plural, "listKind": x.kind + "List", "singular": strings.ToLower(x.kind)},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}})
	}
}

// kueueCRD reads Kueue's Workload CRD from the Go module cache.
func kueueCRD(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "sigs.k8s.io", "kueue@"+kueueVersion, "config", "components", "crd", "bases", "kueue.x-k8s.io_workloads.yaml")
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		if os.Getenv(kubetest.NoKubeEnv) == "1" {
			t.Skipf("no Kueue Workload CRD (%s), and %s=1", p, kubetest.NoKubeEnv)
		}
		t.Fatalf("no Kueue Workload CRD at %s: run deploy/testservers/kube-apiserver.sh (make deps), or go mod download sigs.k8s.io/kueue@%s", p, kueueVersion)
	}
	if err != nil {
		t.Fatal(err)
	}
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal(b, &crd.Object); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return &crd
}

// applyChart applies the rendered objects server-side, as `helm template | kubectl
// apply --server-side` does, into namespace (the release's), and returns them as the
// server has them.
func applyChart(t *testing.T, cfg *rest.Config, c clients, objs []object, namespace string) []*unstructured.Unstructured {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	var out []*unstructured.Unstructured
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o.doc}
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%v: no resource for %v: %v", o, gvk, err)
		}
		r := c.dyn.Resource(m.Resource)
		var ri dynamic.ResourceInterface = r
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := u.GetNamespace()
			if ns == "" {
				ns = namespace
			}
			ri = r.Namespace(ns)
		}
		got, err := ri.Apply(t.Context(), u.GetName(), u, metav1.ApplyOptions{FieldManager: "helm", Force: true})
		if err != nil {
			t.Fatalf("server-side apply %v: %v", o, err)
		}
		out = append(out, got)
	}
	return out
}

func ensureNamespace(t *testing.T, c clients, ns string) {
	t.Helper()
	_, err := c.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The controller-manager would create each namespace's default ServiceAccount;
	// pods need it to pass the ServiceAccount admission plugin.
	_, err = c.kube.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestChartAppliesServerSide applies the default and the large render to a real
// API server: every object is accepted (schema, defaults, admission), and the
// ServiceAccount, RBAC, workloads and the migrate Job are there afterwards.
func TestChartAppliesServerSide(t *testing.T) {
	srv := kubetest.Start(t)
	admin := newClients(t, srv.Admin)
	installThirdPartyCRDs(t, admin)
	ensureNamespace(t, admin, releaseNS)
	for _, name := range []string{"default", "large"} {
		t.Run(name, func(t *testing.T) {
			var rc renderCase
			for _, x := range cases {
				if x.name == name {
					rc = x
				}
			}
			objs := render(t, rc)
			// Each render in a namespace of its own: a claim's size is immutable.
			ns := releaseNS
			if name != "default" {
				ns = releaseNS + "-" + name
			}
			ensureNamespace(t, admin, ns)
			applied := applyChart(t, srv.Admin, admin, objs, ns)
			if len(applied) != len(objs) {
				t.Fatalf("%d objects applied, %d rendered", len(applied), len(objs))
			}
			for i, u := range applied {
				if u.GetUID() == "" || u.GetResourceVersion() == "" {
					t.Errorf("%v: the server returned no UID or resourceVersion", objs[i])
				}
			}
			// Applying again changes nothing: the render is stable and the server
			// defaults nothing the chart then fights over. (Compared without
			// resourceVersion: a no-op apply of a PersistentVolumeClaim still
			// writes it.)
			again := applyChart(t, srv.Admin, admin, objs, ns)
			for i := range again {
				a, b := applied[i].DeepCopy(), again[i].DeepCopy()
				for _, u := range []*unstructured.Unstructured{a, b} {
					u.SetResourceVersion("")
					u.SetManagedFields(nil)
				}
				if !equality.Semantic.DeepEqual(a.Object, b.Object) {
					x, _ := yaml.Marshal(a.Object)
					y, _ := yaml.Marshal(b.Object)
					t.Errorf("%v: a second apply changed the object:\n%s\n---- after ----\n%s", objs[i], x, y)
				}
			}
		})
	}
}
