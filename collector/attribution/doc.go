// Package attribution says which job, team and project a host process belongs to.
//
// In: a host PID (the GPU source reports the PIDs using each GPU) and what procfs
// under Config.ProcRoot says about it:
//
//   - /proc/<pid>/cgroup (cgroup v1, v2 or hybrid). Recognised layouts: Kubernetes
//     pods under the systemd driver
//     (/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with _>.slice/cri-containerd-<id>.scope,
//     also crio-, docker- and the besteffort and guaranteed classes) and the cgroupfs
//     driver (/kubepods/burstable/pod<uid>/<id>, /kubepods/pod<uid>/<id>); Docker and
//     Podman containers (/docker/<id>, /system.slice/docker-<id>.scope); Slurm job
//     steps (/slurm/uid_<uid>/job_<id>/step_<step>/…,
//     /system.slice/slurmstepd.scope/job_<id>/step_<step>/user/task_<n>). Anything
//     else (systemd user and system slices) names no job.
//   - /proc/<pid>/environ: SLURM_JOB_ID, SLURM_CLUSTER_NAME, SLURM_JOB_ACCOUNT
//     (project), SLURM_JOB_PARTITION (queue), SLURM_JOB_USER, SLURM_JOB_START_TIME,
//     and gpupool's own GPUPOOL_JOB, GPUPOOL_TEAM, GPUPOOL_PROJECT, GPUPOOL_QUEUE,
//     GPUPOOL_POOL, GPUPOOL_MODEL and GPUPOOL_WORKLOAD. An environment that cannot
//     be read (another user's, EACCES) is skipped; the cgroup alone decides.
//   - /proc/<pid>/stat field 22, the start time in clock ticks (USER_HZ = 100)
//     since boot (btime in /proc/stat): it tells a reused PID from the process that
//     had it, and is the start of a plain process's job.
//   - the kubelet's /pods (Config.KubeletURL, optional): each pod's namespace,
//     labels and start time. Team, project, queue, pool, model and workload come
//     from the first label in Config.LabelKeys the pod has.
//   - the mapping file (Config.MappingFile, optional, format in mapping.go): rules
//     that match processes by executable, command line, user ID, cgroup path,
//     namespace or Slurm account/partition.
//
// Out: a collector.JobInfo. The job key is, first match wins:
//
//	k8s/<namespace>/<pod uid>   a pod's process (k8s/_/<pod uid> while the kubelet
//	                            is not configured or does not describe the pod)
//	slurm/<cluster>/<job id>    a Slurm task (cluster: SLURM_CLUSTER_NAME, else
//	                            Config.Cluster)
//	proc/<node>/<GPUPOOL_JOB>   a process started with GPUPOOL_JOB set
//	<mapping rule's job>        default proc/<node>/<pid>/<start unix s>
//	""                          unattributed; the process is still sampled
//
// StartMs is the pod's start time for Kubernetes, SLURM_JOB_START_TIME for Slurm
// (0 when absent) and the process's start time otherwise, in ms since the epoch.
//
// Attributions are cached per PID together with the process start time, so a
// reused PID is attributed afresh; a cached answer costs one read of
// /proc/<pid>/stat and is kept for Config.CacheTTL. Call Forget with the PIDs still
// alive to drop the rest; entries not asked for in Config.EvictAfter go anyway.
//
// Errors: a PID that no longer exists gives ErrNoProcess, an unparsable cgroup file
// ErrBadCgroup; both with JobInfo{}. Kubelet failures are logged and counted
// (Stats), never returned: the pod is attributed as k8s/_/<pod uid> meanwhile.
package attribution
