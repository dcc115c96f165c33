package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpupool/gpupool/scheduler/executor"
)

var _ executor.Executor = (*Executor)(nil)

// Executor acts on Kubernetes pods, Jobs and Kueue Workloads. It is safe for
// concurrent use.
type Executor struct {
	cfg   executor.KubernetesConfig
	kube  k8s.Interface
	dyn   dynamic.Interface
	wlGVR schema.GroupVersionResource
	log   *slog.Logger
}

// Option configures New.
type Option func(*options)

type options struct {
	kube k8s.Interface
	dyn  dynamic.Interface
	log  *slog.Logger
}

// WithClients makes the executor use these clients instead of building them from
// the kubeconfig (tests pass client-go's fake clientsets). dyn reaches Kueue's
// Workloads; with dyn nil Kueue is never consulted.
func WithClients(kube k8s.Interface, dyn dynamic.Interface) Option {
	return func(o *options) { o.kube, o.dyn = kube, dyn }
}

// WithLogger sets the logger.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) { o.log = log }
}

// New returns an executor. Without WithClients it builds clients from
// cfg.Kubeconfig, or from the in-cluster service account when that is empty.
func New(cfg executor.KubernetesConfig, opts ...Option) (*Executor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kubernetes executor: %w", err)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.kube == nil {
		rc, err := restConfig(cfg)
		if err != nil {
			return nil, err
		}
		if o.kube, err = k8s.NewForConfig(rc); err != nil {
			return nil, fmt.Errorf("kubernetes executor: clientset: %w", err)
		}
		if o.dyn, err = dynamic.NewForConfig(rc); err != nil {
			return nil, fmt.Errorf("kubernetes executor: dynamic client: %w", err)
		}
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	return &Executor{
		cfg: cfg, kube: o.kube, dyn: o.dyn,
		wlGVR: schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: cfg.KueueVersion, Resource: "workloads"},
		log:   o.log.With("component", "executor", "executor", "kubernetes"),
	}, nil
}

func restConfig(cfg executor.KubernetesConfig) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if cfg.Kubeconfig == "" {
		if rc, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("kubernetes executor: in-cluster config: %w (outside a cluster, set kubeconfig)", err)
		}
	} else {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.Kubeconfig}
		over := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
		if rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over).ClientConfig(); err != nil {
			return nil, fmt.Errorf("kubernetes executor: kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
	}
	rc.Timeout = cfg.RequestTimeout
	rc.UserAgent = "gpupool-scheduler"
	return rc, nil
}

// Name returns "kubernetes".
func (e *Executor) Name() string { return "kubernetes" }

// Stop frees the pod's GPUs: with requeue it deactivates the Kueue Workload,
// suspends the Job or evicts the pod; without, it deletes the Job or evicts the pod.
func (e *Executor) Stop(ctx context.Context, t executor.Target, requeue bool, grace time.Duration) (executor.Outcome, error) {
	out, err := e.stop(ctx, t, requeue, grace)
	if err != nil {
		return out, fmt.Errorf("kubernetes: stop %s: %w", describe(t), err)
	}
	e.log.Info("stop", "job", t.Job, "requeue", requeue, "done", out.Done, "detail", out.Detail)
	return out, nil
}

func (e *Executor) stop(ctx context.Context, t executor.Target, requeue bool, grace time.Duration) (executor.Outcome, error) {
	if err := accepts(t); err != nil {
		return executor.Outcome{}, err
	}
	r, err := e.resolve(ctx, t)
	if err != nil {
		return executor.Outcome{}, err
	}
	if !requeue {
		switch {
		case r.job != nil:
			return e.deleteJob(ctx, r.job)
		case r.pod != nil:
			return e.evict(ctx, r.pod, grace)
		case r.wl != nil:
			return e.setWorkloadActive(ctx, r.wl, false)
		}
		return executor.Outcome{}, executor.ErrNotFound
	}
	switch {
	case r.wl != nil:
		return e.setWorkloadActive(ctx, r.wl, false)
	case r.job != nil:
		return e.setJobSuspend(ctx, r.job, true)
	case r.pod != nil:
		return e.evict(ctx, r.pod, grace)
	}
	return executor.Outcome{}, executor.ErrNotFound
}

// Resume reactivates the Kueue Workload or unsuspends the Job.
func (e *Executor) Resume(ctx context.Context, t executor.Target) (executor.Outcome, error) {
	out, err := e.resume(ctx, t)
	if err != nil {
		return out, fmt.Errorf("kubernetes: resume %s: %w", describe(t), err)
	}
	e.log.Info("resume", "job", t.Job, "done", out.Done, "detail", out.Detail)
	return out, nil
}

func (e *Executor) resume(ctx context.Context, t executor.Target) (executor.Outcome, error) {
	if err := accepts(t); err != nil {
		return executor.Outcome{}, err
	}
	if !useJob(e.cfg) {
		return executor.Outcome{}, fmt.Errorf("%w: mode is evict, and an evicted pod is recreated by its controller, not resumed", executor.ErrUnsupported)
	}
	r, err := e.resolve(ctx, t)
	if err != nil {
		return executor.Outcome{}, err
	}
	if nodes := t.Nodes(); len(nodes) > 0 {
		share, err := e.checkShare(t, r)
		if err != nil {
			return executor.Outcome{}, err
		}
		out, err := e.resumePlaced(ctx, r, nodes)
		if err == nil && out.Done {
			out.Detail += share
		}
		return out, err
	}
	switch {
	case r.wl != nil:
		return e.setWorkloadActive(ctx, r.wl, true)
	case r.job != nil:
		return e.setJobSuspend(ctx, r.job, false)
	}
	return executor.Outcome{}, fmt.Errorf("%w: pod %s/%s has no Job or Kueue Workload to resume", executor.ErrUnsupported, r.pod.Namespace, r.pod.Name)
}

// Kill returns ErrUnsupported: processes are the node agent's.
func (e *Executor) Kill(_ context.Context, t executor.Target, _ time.Duration) (executor.Outcome, error) {
	return executor.Outcome{}, fmt.Errorf("kubernetes: kill PID %d of %s: %w (processes are the node agent's)", t.PID, describe(t), executor.ErrUnsupported)
}

// useKueue reports whether Workloads may be looked up and patched.
func useKueue(c executor.KubernetesConfig) bool {
	return c.Mode == executor.KubernetesModeAuto || c.Mode == executor.KubernetesModeKueueWorkload
}

// useJob reports whether Jobs may be suspended, resumed or deleted.
func useJob(c executor.KubernetesConfig) bool { return c.Mode != executor.KubernetesModeEvict }

var _ executor.Checker = (*Executor)(nil)

// Check resolves the target: a Job or Workload that finished, a pod that ended
// with no Job or Workload behind it, or nothing found at all, is gone. A
// suspended Job or deactivated Workload is still there (it waits to run again).
func (e *Executor) Check(ctx context.Context, t executor.Target) (executor.Presence, error) {
	p, err := e.check(ctx, t)
	if err != nil {
		return p, fmt.Errorf("kubernetes: check %s: %w", describe(t), err)
	}
	return p, nil
}

func (e *Executor) check(ctx context.Context, t executor.Target) (executor.Presence, error) {
	if err := accepts(t); err != nil {
		return executor.Presence{}, err
	}
	r, err := e.resolve(ctx, t)
	switch {
	case errors.Is(err, executor.ErrNotFound):
		return executor.Presence{Gone: true, Detail: err.Error()}, nil
	case err != nil:
		return executor.Presence{}, err
	}
	switch {
	case r.wl != nil:
		name := "Workload " + r.wl.GetNamespace() + "/" + r.wl.GetName()
		if workloadFinished(r.wl) || r.wl.GetDeletionTimestamp() != nil {
			return executor.Presence{Gone: true, Detail: name + " finished or being deleted"}, nil
		}
		return executor.Presence{Detail: name + " still there"}, nil
	case r.job != nil:
		name := "Job " + r.job.Namespace + "/" + r.job.Name
		if jobFinished(r.job) || r.job.DeletionTimestamp != nil {
			return executor.Presence{Gone: true, Detail: name + " finished or being deleted"}, nil
		}
		return executor.Presence{Detail: name + " still there"}, nil
	}
	name := "pod " + r.pod.Namespace + "/" + r.pod.Name
	if r.pod.DeletionTimestamp != nil || r.pod.Status.Phase == corev1.PodSucceeded || r.pod.Status.Phase == corev1.PodFailed {
		return executor.Presence{Gone: true, Detail: name + " ended (" + string(r.pod.Status.Phase) + ")"}, nil
	}
	return executor.Presence{Detail: name + " " + string(r.pod.Status.Phase)}, nil
}
