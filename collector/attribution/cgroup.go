package attribution

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// cgroupKind is what a process's cgroup path says it runs under, in increasing
// order of how much it tells about the job.
type cgroupKind uint8

const (
	// cgroupOther: a systemd slice, the root, or anything not recognised.
	cgroupOther cgroupKind = iota
	// cgroupContainer: a Docker or Podman container outside Kubernetes.
	cgroupContainer
	// cgroupSlurm: a Slurm job step.
	cgroupSlurm
	// cgroupKubernetes: a container (or the sandbox) of a Kubernetes pod.
	cgroupKubernetes
)

func (k cgroupKind) String() string {
	switch k {
	case cgroupContainer:
		return "container"
	case cgroupSlurm:
		return "slurm"
	case cgroupKubernetes:
		return "kubernetes"
	}
	return "other"
}

// Kubernetes QoS classes as the kubelet names its cgroups.
const (
	qosGuaranteed = "guaranteed"
	qosBurstable  = "burstable"
	qosBestEffort = "besteffort"
)

// cgroupInfo is what parseCgroup learns from /proc/<pid>/cgroup.
type cgroupInfo struct {
	Kind cgroupKind
	// Path is the cgroup path the information came from: the most telling line's,
	// or the unified (v2) line's when none tells anything.
	Path string
	// PodUID is the pod's UID with dashes (systemd's underscores undone).
	PodUID string
	// QoS is guaranteed, burstable or besteffort.
	QoS string
	// ContainerID is the container's hex ID; empty for a process in the pod's own
	// slice.
	ContainerID string
	// Runtime is containerd, crio, docker or podman; empty when the cgroupfs driver
	// does not say.
	Runtime string
	// SlurmJobID is the numeric Slurm job ID.
	SlurmJobID string
	// SlurmStep is the step: a number, batch, extern or interactive.
	SlurmStep string
	// SlurmUID is the job owner's numeric user ID, when the path has it.
	SlurmUID string
	// JobPath is the job's own cgroup, Path cut after the pod's or the Slurm
	// job's component ("/kubepods.slice/…/kubepods-burstable-pod<uid>.slice",
	// "/system.slice/slurmstepd.scope/job_<id>"): the one cgroup that holds every
	// process of the job, whose memory.events counts its OOM kills. Empty for
	// other kinds and for a path seen through a cgroup namespace ("/../…"), which
	// names no directory under the host's cgroup root.
	JobPath string
}

// maxCgroupLine is how much of a bad line goes into an error message.
const maxCgroupLine = 120

// parseCgroup reads the contents of /proc/<pid>/cgroup: cgroup v1 lines
// "<id>:<controllers>:<path>" (one per hierarchy), the v2 line "0::<path>", or both
// (hybrid). Every path is classified and the most telling one wins, so a v1
// hierarchy that still shows the systemd session does not hide the job another
// hierarchy names. It returns an error wrapping ErrBadCgroup for a line that is not
// in that form or an input with no lines.
func parseCgroup(data []byte) (cgroupInfo, error) {
	var best cgroupInfo
	found := false
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		if len(line) == 0 {
			continue
		}
		id, rest, ok := bytes.Cut(line, []byte{':'})
		if !ok || len(id) == 0 || !isDigits(string(id)) {
			return cgroupInfo{}, fmt.Errorf("%w: line %d %q: want <hierarchy id>:<controllers>:<path>", ErrBadCgroup, n, clip(line))
		}
		controllers, path, ok := bytes.Cut(rest, []byte{':'})
		if !ok || len(path) == 0 || path[0] != '/' {
			return cgroupInfo{}, fmt.Errorf("%w: line %d %q: want an absolute cgroup path after the second colon", ErrBadCgroup, n, clip(line))
		}
		unified := len(controllers) == 0 && string(id) == "0"
		info := classifyCgroupPath(string(path))
		if !found || info.Kind > best.Kind || (info.Kind == cgroupOther && best.Kind == cgroupOther && unified) {
			best = info
			found = true
		}
	}
	if !found {
		return cgroupInfo{}, fmt.Errorf("%w: no cgroup lines", ErrBadCgroup)
	}
	return best, nil
}

// classifyCgroupPath recognises the cgroup layouts of the kubelet (systemd and
// cgroupfs drivers), Docker and Podman, and Slurm (cgroup/v1 and cgroup/v2 plugins).
// Components are matched anywhere in the path, not only at its start, so that a path
// seen through a cgroup namespace ("/../../kubepods-…") is still recognised.
func classifyCgroupPath(path string) cgroupInfo {
	comps := strings.Split(path, "/")
	if info, ok := kubernetesCgroup(path, comps); ok {
		return info
	}
	if info, ok := slurmCgroup(path, comps); ok {
		return info
	}
	if info, ok := containerCgroup(path, comps); ok {
		return info
	}
	return cgroupInfo{Kind: cgroupOther, Path: path}
}

// kubernetesCgroup finds a pod's cgroup: with the systemd driver
// "kubepods[-<qos>]-pod<uid with _>.slice" (under kubepods.slice and, for kind or
// rootless clusters, kubelet.slice), with the cgroupfs driver "pod<uid>" under
// "kubepods[/<qos>]". The component after the pod's names the container.
func kubernetesCgroup(path string, comps []string) (cgroupInfo, bool) {
	for i, c := range comps {
		var uid, qos string
		if strings.HasSuffix(c, ".slice") && strings.Contains(c, "kubepods") {
			j := strings.LastIndex(c, "-pod")
			if j < 0 {
				continue
			}
			uid = strings.ReplaceAll(c[j+len("-pod"):len(c)-len(".slice")], "_", "-")
			switch {
			case strings.Contains(c[:j+1], "-besteffort-"):
				qos = qosBestEffort
			case strings.Contains(c[:j+1], "-burstable-"):
				qos = qosBurstable
			default:
				qos = qosGuaranteed
			}
		} else if strings.HasPrefix(c, "pod") && i > 0 {
			switch parent := comps[i-1]; parent {
			case qosBurstable, qosBestEffort:
				qos = parent
			case "kubepods", "..":
				qos = qosGuaranteed
			default:
				continue
			}
			uid = c[len("pod"):]
		} else {
			continue
		}
		if !validPodUID(uid) {
			continue
		}
		info := cgroupInfo{Kind: cgroupKubernetes, Path: path, PodUID: uid, QoS: qos, JobPath: jobPath(comps[:i+1])}
		if i+1 < len(comps) {
			info.Runtime, info.ContainerID = parseContainerComponent(comps[i+1])
		}
		return info, true
	}
	return cgroupInfo{}, false
}

// parseContainerComponent reads a container's cgroup name: "cri-containerd-<id>.scope",
// "crio-<id>.scope", "crio-conmon-<id>.scope", "docker-<id>.scope",
// "libpod-<id>.scope" (systemd driver), "crio-<id>" or a bare "<id>" (cgroupfs).
func parseContainerComponent(c string) (runtime, id string) {
	c = strings.TrimSuffix(c, ".scope")
	for _, p := range [...]struct{ prefix, runtime string }{
		{"cri-containerd-", "containerd"},
		{"crio-conmon-", "crio"},
		{"crio-", "crio"},
		{"docker-", "docker"},
		{"libpod-", "podman"},
	} {
		if rest, ok := strings.CutPrefix(c, p.prefix); ok {
			if validContainerID(rest) {
				return p.runtime, rest
			}
			return "", ""
		}
	}
	if validContainerID(c) {
		return "", c
	}
	return "", ""
}

// slurmCgroup finds a Slurm job step: "job_<id>" below "slurm" (cgroup/v1:
// "/slurm/uid_<uid>/job_<id>/step_<step>/task_<n>"), "slurm_<node>" (several
// slurmd on one host) or "slurmstepd.scope" (cgroup/v2:
// "/system.slice/slurmstepd.scope/job_<id>/step_<step>/user/task_<n>";
// "<node>_slurmstepd.scope" with several slurmd).
func slurmCgroup(path string, comps []string) (cgroupInfo, bool) {
	inSlurm := false
	var uid string
	for i, c := range comps {
		switch {
		case c == "slurm" || c == "slurmstepd.scope" || strings.HasSuffix(c, "_slurmstepd.scope") || strings.HasPrefix(c, "slurm_"):
			inSlurm = true
		case !inSlurm:
		case strings.HasPrefix(c, "uid_") && isDigits(c[len("uid_"):]):
			uid = c[len("uid_"):]
		case strings.HasPrefix(c, "job_") && isDigits(c[len("job_"):]):
			info := cgroupInfo{Kind: cgroupSlurm, Path: path, SlurmJobID: c[len("job_"):], SlurmUID: uid, JobPath: jobPath(comps[:i+1])}
			if i+1 < len(comps) {
				if step, ok := strings.CutPrefix(comps[i+1], "step_"); ok && isStepName(step) {
					info.SlurmStep = step
				}
			}
			return info, true
		}
	}
	return cgroupInfo{}, false
}

// containerCgroup finds a container outside Kubernetes: "/docker/<id>" (cgroupfs
// driver), "docker-<id>.scope" or "libpod-<id>.scope" (systemd driver).
func containerCgroup(path string, comps []string) (cgroupInfo, bool) {
	for i, c := range comps {
		var runtime, id string
		switch {
		case c == "docker" && i+1 < len(comps) && validContainerID(comps[i+1]):
			runtime, id = "docker", comps[i+1]
		case strings.HasSuffix(c, ".scope") && (strings.HasPrefix(c, "docker-") || strings.HasPrefix(c, "libpod-")):
			runtime, id = parseContainerComponent(c)
		}
		if id != "" {
			return cgroupInfo{Kind: cgroupContainer, Path: path, Runtime: runtime, ContainerID: id}, true
		}
	}
	return cgroupInfo{}, false
}

// jobPath joins the components of a cgroup path up to the job's own, or returns ""
// when they climb out of a cgroup namespace.
func jobPath(comps []string) string {
	if slices.Contains(comps, "..") {
		return ""
	}
	return strings.Join(comps, "/")
}

// validPodUID reports whether s is a pod UID: a UUID in its 8-4-4-4-12 hex form
// (what the API server assigns) or 32 hex digits (what the kubelet assigns a static
// pod).
func validPodUID(s string) bool {
	switch len(s) {
	case 32:
		return isHex(s)
	case 36:
		for i := 0; i < len(s); i++ {
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if s[i] != '-' {
					return false
				}
			} else if !isHexDigit(s[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// validContainerID reports whether s looks like a container ID: 12 to 64 hex digits
// (runtimes use 64; 12 is Docker's short form).
func validContainerID(s string) bool {
	return len(s) >= 12 && len(s) <= 64 && isHex(s)
}

// isStepName reports whether s names a Slurm step: a number, "<n>+<m>"
// (heterogeneous), batch, extern or interactive.
func isStepName(s string) bool {
	switch s {
	case "batch", "extern", "interactive":
		return true
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '+' {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHexDigit(b byte) bool {
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

func clip(b []byte) []byte {
	if len(b) > maxCgroupLine {
		return b[:maxCgroupLine]
	}
	return b
}
