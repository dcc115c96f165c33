package kubernetes

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpupool/gpupool/scheduler/executor"
)

var _ executor.Resolver = (*Executor)(nil)

// Owner resolves the target as Stop and Resume would (its pod, Job or Kueue
// Workload, read from the API server) and maps the namespace the API server has
// it in through KubernetesConfig.Namespaces. A target the cluster does not have
// is ErrNotFound, with the owner of the namespace it names when it names one;
// a namespace the mapping lacks is ErrUnmapped.
func (e *Executor) Owner(ctx context.Context, t executor.Target) (executor.Owner, error) {
	o, err := e.owner(ctx, t)
	if err != nil {
		return o, fmt.Errorf("kubernetes: owner of %s: %w", describe(t), err)
	}
	return o, nil
}

func (e *Executor) owner(ctx context.Context, t executor.Target) (executor.Owner, error) {
	if err := accepts(t); err != nil {
		return executor.Owner{}, err
	}
	r, err := e.resolve(ctx, t)
	if errors.Is(err, executor.ErrNotFound) && t.Namespace != "" {
		// Nothing there yet; the namespace it would be looked up in still has an
		// owner, and a Job created there later is that owner's.
		o := executor.Owner{Namespace: t.Namespace, Detail: "namespace " + t.Namespace + " (nothing found in it yet)"}
		m, ok := e.cfg.Namespaces[t.Namespace]
		if !ok || m.Team == "" {
			return o, fmt.Errorf("%w: namespace %s (scheduler.kubernetes.namespaces); %w", executor.ErrUnmapped, t.Namespace, err)
		}
		o.Team, o.Queue, o.Pool = m.Team, m.Queue, m.Pool
		return o, err
	}
	if err != nil {
		return executor.Owner{}, err
	}
	// The namespace of the objects found, not the one the target names: resolve
	// looked them up in it, and the API server returned them from there.
	var ns, what string
	switch {
	case r.pod != nil:
		ns, what = r.pod.Namespace, "pod "+r.pod.Namespace+"/"+r.pod.Name
	case r.job != nil:
		ns, what = r.job.Namespace, "Job "+r.job.Namespace+"/"+r.job.Name
	default:
		ns, what = r.wl.GetNamespace(), "Workload "+r.wl.GetNamespace()+"/"+r.wl.GetName()
	}
	o := executor.Owner{Namespace: ns, Detail: "namespace " + ns + " of " + what}
	m, ok := e.cfg.Namespaces[ns]
	if !ok || m.Team == "" {
		return o, fmt.Errorf("%w: namespace %s (scheduler.kubernetes.namespaces)", executor.ErrUnmapped, ns)
	}
	o.Team, o.Queue, o.Pool = m.Team, m.Queue, m.Pool
	return o, nil
}
