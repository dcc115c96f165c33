package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpupool/gpupool/bus/agentwire"
	"github.com/gpupool/gpupool/collector"
)

// Attributor says which job a process belongs to now, read afresh from its
// cgroup (Kubernetes pod, Slurm job) and environment; the collector's
// attribution.Attributor implements it with AttributeNow.
type Attributor interface {
	AttributeNow(ctx context.Context, pid uint32) (collector.JobInfo, error)
}

// WithAttributor has the agent attribute each target PID afresh before acting on
// it (the collector wires its attributor): the PID must belong, now, to the job
// the command names and to no protected pool. Without one, the agent knows a
// PID's job from the collector's last sample only, and its pool not at all.
func WithAttributor(attr Attributor) Option {
	return func(a *Agent) { a.attr = attr }
}

// ownership checks that the PID of cmd belongs to the job the command names
// (sampleJob is its job in the collector's last sample) and to no protected pool,
// and returns why not, or "". gone reports a process that exited meanwhile.
func (a *Agent) ownership(ctx context.Context, cmd agentwire.Command, sampleJob string) (reason string, gone bool) {
	if p := cmd.Pool; p != "" && slices.Contains(a.cfg.ProtectedPools, p) {
		return fmt.Sprintf("PID %d: the command's pool %q is protected on this node (agent.protected_pools)", cmd.PID, p), false
	}
	if a.attr == nil {
		return "", false
	}
	info, err := a.attr.AttributeNow(ctx, cmd.PID)
	if err != nil {
		if !a.alive(int(cmd.PID)) {
			return "", true
		}
		return fmt.Sprintf("PID %d: cannot tell which job it belongs to: %v", cmd.PID, err), false
	}
	switch {
	case !sameJob(info.Job, sampleJob):
		return fmt.Sprintf("PID %d belongs to job %q now (its cgroup), not %q as in the last sample: the PID was reused", cmd.PID, info.Job, sampleJob), false
	case cmd.Job != "" && !sameJob(info.Job, cmd.Job):
		return fmt.Sprintf("PID %d belongs to job %q (its cgroup), not %q", cmd.PID, info.Job, cmd.Job), false
	case info.Pool != "" && slices.Contains(a.cfg.ProtectedPools, info.Pool):
		return fmt.Sprintf("PID %d: its job %q is in pool %q, protected on this node (agent.protected_pools)", cmd.PID, info.Job, info.Pool), false
	case cmd.Pool != "" && info.Pool != "" && cmd.Pool != info.Pool:
		return fmt.Sprintf("PID %d: its job %q is in pool %q on this node, the command says %q", cmd.PID, info.Job, info.Pool, cmd.Pool), false
	}
	return "", false
}

// sameJob reports whether two job keys name the same job: equal, or the same pod
// where one key was made before the kubelet described it ("k8s/_/<uid>").
func sameJob(a, b string) bool {
	if a == b {
		return true
	}
	ua, oka := podUID(a)
	ub, okb := podUID(b)
	return oka && okb && ua == ub && (strings.HasPrefix(a, "k8s/_/") || strings.HasPrefix(b, "k8s/_/"))
}

// podUID returns the pod UID of a "k8s/<namespace>/<uid>" job key.
func podUID(job string) (string, bool) {
	rest, ok := strings.CutPrefix(job, "k8s/")
	if !ok {
		return "", false
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 || i == len(rest)-1 {
		return "", false
	}
	return rest[i+1:], true
}
