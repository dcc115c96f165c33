package attribution

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/schemas"
)

// maxEnvJobBytes bounds a GPUPOOL_JOB value taken into a job key.
const maxEnvJobBytes = 200

// Option changes how New builds an Attributor.
type Option func(*options)

type options struct {
	log  *slog.Logger
	http *http.Client
	now  func() time.Time
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithHTTPClient sets the client used for the kubelet, replacing the one built from
// the kubelet_* TLS settings (tests use the httptest server's client).
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.http = c } }

// WithClock sets the clock used for cache expiry and eviction (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// Stats are an Attributor's totals since New.
type Stats struct {
	// Cached is the number of PIDs in the cache now.
	Cached int
	// Hits and Misses count Attribute calls answered from the cache or not.
	Hits, Misses uint64
	// EnvironUnreadable counts processes whose environment could not be read (another
	// user's, without CAP_SYS_PTRACE); they were attributed from their cgroup alone.
	EnvironUnreadable uint64
	// Evicted counts cache entries dropped by Forget or for being idle.
	Evicted uint64
	// KubeletFetches and KubeletFailures count /pods requests and failed ones.
	KubeletFetches, KubeletFailures uint64
	// Sanitized counts attributions whose values (pod labels, environment,
	// Slurm variables) broke the identifier rules and were sanitised (see
	// sanitize); each is logged with the fields changed.
	Sanitized uint64
}

// Attributor attributes host PIDs to jobs from procfs, the kubelet and a mapping
// file. It is safe for concurrent use.
type Attributor struct {
	cfg     Config
	fs      procFS
	bootMs  int64
	kube    *kubeletClient // nil without a kubelet
	mapping *mapping       // nil without a mapping file
	cache   *pidCache
	log     *slog.Logger
	now     func() time.Time

	hits, misses, environUnreadable, evicted, sanitized atomic.Uint64
}

var _ collector.EndReasoner = (*Attributor)(nil)
var _ collector.Attributor = (*Attributor)(nil)

// New validates cfg, reads the boot time from <proc_root>/stat and the mapping file,
// and returns an Attributor. It makes no request to the kubelet: the pod list is
// fetched when the first pod process is attributed.
func New(cfg Config, opts ...Option) (*Attributor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("attribution: %w", err)
	}
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	a := &Attributor{
		cfg:   cfg,
		fs:    newProcFS(cfg.ProcRoot),
		cache: newPIDCache(),
		log:   o.log.With("component", "attribution"),
		now:   o.now,
	}
	boot, err := a.fs.bootTimeSeconds()
	if err != nil {
		return nil, fmt.Errorf("attribution: proc_root: %w (is %q a procfs mount?)", err, cfg.ProcRoot)
	}
	a.bootMs = boot * 1000
	if cfg.MappingFile != "" {
		if a.mapping, err = loadMapping(cfg.MappingFile); err != nil {
			return nil, fmt.Errorf("attribution: %w", err)
		}
	}
	if cfg.KubeletURL != "" {
		if a.kube, err = newKubeletClient(cfg, o.http, o.now, a.log); err != nil {
			return nil, fmt.Errorf("attribution: %w", err)
		}
	}
	return a, nil
}

// Attribute returns the job of the process pid. A process nobody knows gets
// JobInfo{} and no error. A process that is gone gets an error wrapping
// ErrNoProcess; one whose cgroup file cannot be parsed an error wrapping
// ErrBadCgroup. The returned Labels map is shared: do not modify it.
//
// A PID attributed before, with the same start time and within cache_ttl, is
// answered from the cache with one read of /proc/<pid>/stat.
func (a *Attributor) Attribute(ctx context.Context, pid uint32) (collector.JobInfo, error) {
	nowNs := a.now().UnixNano()
	if e := a.cache.get(pid); e != nil && nowNs < e.expiresNs {
		if nowNs-e.checkedNs.Load() < int64(a.cfg.RecheckAfter) {
			e.lastSeenNs.Store(nowNs)
			a.hits.Add(1)
			return e.info, nil
		}
		if ticks, err := readStartTicks(e.statPath); err == nil && ticks == e.startTicks {
			e.checkedNs.Store(nowNs)
			e.lastSeenNs.Store(nowNs)
			a.hits.Add(1)
			return e.info, nil
		}
		a.cache.drop(pid, e)
	} else if e != nil {
		a.cache.drop(pid, e)
	}
	a.misses.Add(1)
	return a.resolve(ctx, pid, nowNs)
}

// AttributeNow attributes pid from procfs now, never from the cache, and caches
// the answer. The node agent asks it before it signals a process: a PID reused
// since the last sample, or moved to another cgroup, is seen as it is now.
func (a *Attributor) AttributeNow(ctx context.Context, pid uint32) (collector.JobInfo, error) {
	if e := a.cache.get(pid); e != nil {
		a.cache.drop(pid, e)
	}
	a.misses.Add(1)
	return a.resolve(ctx, pid, a.now().UnixNano())
}

// Forget drops the cached attribution of every PID not in alive and returns how
// many it dropped. Call it with the PIDs still running (those the GPU source
// reported this tick, say) so that the cache does not grow with dead processes;
// entries not asked for in evict_after are dropped anyway.
func (a *Attributor) Forget(alive []uint32) int {
	n := a.cache.retain(alive)
	a.evicted.Add(uint64(n))
	return n
}

// Stats returns totals since New.
func (a *Attributor) Stats() Stats {
	s := Stats{
		Cached: a.cache.len(), Hits: a.hits.Load(), Misses: a.misses.Load(),
		EnvironUnreadable: a.environUnreadable.Load(), Evicted: a.evicted.Load(), Sanitized: a.sanitized.Load(),
	}
	if a.kube != nil {
		s.KubeletFetches, s.KubeletFailures = a.kube.stats()
	}
	return s
}

// resolve attributes pid from procfs and caches the answer.
func (a *Attributor) resolve(ctx context.Context, pid uint32, nowNs int64) (collector.JobInfo, error) {
	statPath := a.fs.path(pid, "stat")
	ticks, err := readStartTicks(statPath)
	if err != nil {
		return collector.JobInfo{}, fmt.Errorf("attribution: %w", procErr(pid, "stat", err))
	}
	cgData, err := a.fs.read(pid, "cgroup")
	if err != nil {
		return collector.JobInfo{}, fmt.Errorf("attribution: %w", err)
	}
	cg, err := parseCgroup(cgData)
	if err != nil {
		return collector.JobInfo{}, fmt.Errorf("attribution: /proc/%d/cgroup: %w", pid, err)
	}
	f := &procFacts{
		fs: a.fs, pid: pid, node: a.cfg.Node, cluster: a.cfg.Cluster, cgroup: cg,
		startMs: a.bootMs + int64(ticks)*(1000/userHZ),
	}
	if envData, err := a.fs.read(pid, "environ"); err == nil {
		f.env = parseEnviron(envData)
	} else {
		// Another user's environment needs CAP_SYS_PTRACE; the cgroup still tells
		// Kubernetes and Slurm jobs apart.
		a.environUnreadable.Add(1)
		a.log.Debug("environment unreadable, attributing from cgroup only", "pid", pid, "err", err)
	}

	info, pending := a.decide(ctx, f)
	if fixed := sanitize(&info); len(fixed) > 0 {
		a.sanitized.Add(1)
		a.log.Warn("attribution values outside the identifier rules were sanitised", "pid", pid, "job", info.Job, "fields", fixed)
	}

	ttl := a.cfg.CacheTTL
	if pending && a.cfg.KubeletMinRefresh < ttl {
		ttl = max(a.cfg.KubeletMinRefresh, time.Second)
	}
	e := &entry{statPath: statPath, startTicks: ticks, info: info, expiresNs: nowNs + int64(ttl)}
	e.checkedNs.Store(nowNs)
	e.lastSeenNs.Store(nowNs)
	a.cache.put(pid, e)
	if n := a.cache.sweep(nowNs, int64(a.cfg.EvictAfter)); n > 0 {
		a.evicted.Add(uint64(n))
	}
	return info, nil
}

// decide turns what is known of a process into its JobInfo. Kubernetes (from the
// cgroup) comes first, then Slurm (cgroup or SLURM_JOB_ID), then GPUPOOL_JOB, then
// the mapping file. Fields a scheduler leaves empty are filled from GPUPOOL_*
// variables, then from the first matching mapping rule. pending reports a pod the
// kubelet did not describe, to be asked again soon.
func (a *Attributor) decide(ctx context.Context, f *procFacts) (info collector.JobInfo, pending bool) {
	switch {
	case f.cgroup.Kind == cgroupKubernetes:
		info, pending = a.kubernetesJob(ctx, f)
	case f.cgroup.Kind == cgroupSlurm || isDigits(f.env.SlurmJobID):
		info = a.slurmJob(f)
	case f.env.Job != "" && validEnvJob(f.env.Job):
		info = collector.JobInfo{Job: "proc/" + a.cfg.Node + "/" + f.env.Job, Source: schemas.SourceProcess, StartMs: f.startMs}
	}
	if info.Job != "" {
		fillEmpty(&info, f.env.Team, f.env.Project, f.env.Queue, f.env.Pool, f.env.Model, f.env.Workload)
	}
	if (f.cgroup.Kind == cgroupKubernetes || f.cgroup.Kind == cgroupSlurm) && info.Job != "" {
		info.Cgroup = f.cgroup.JobPath
	}
	r, groups := a.mapping.match(f)
	if r == nil {
		a.setOutput(&info, f)
		return info, pending
	}
	defer a.setOutput(&info, f)
	value := f.placeholderFunc(groups)
	if info.Job == "" {
		info = collector.JobInfo{Job: r.job.expand(value), Source: schemas.SourceProcess, StartMs: f.startMs}
	}
	fillEmpty(&info, r.team.expand(value), r.project.expand(value), r.queue.expand(value),
		r.pool.expand(value), r.model.expand(value), r.workload.expand(value))
	if len(r.labels) > 0 {
		labels := make(map[string]string, len(info.Labels)+len(r.labels))
		maps.Copy(labels, r.labels)
		maps.Copy(labels, info.Labels) // the job's own labels win
		info.Labels = labels
	}
	return info, pending
}

// kubernetesJob attributes a pod's process: "k8s/<namespace>/<pod uid>" with the
// pod's labels, or "k8s/_/<pod uid>" when the kubelet is not configured or did not
// describe the pod (then pending, when there is a kubelet to ask again).
func (a *Attributor) kubernetesJob(ctx context.Context, f *procFacts) (collector.JobInfo, bool) {
	uid := f.cgroup.PodUID
	info := collector.JobInfo{Job: "k8s/_/" + uid, Source: schemas.SourceKubernetes}
	if a.kube == nil {
		return info, false
	}
	pod, err := a.kube.lookup(ctx, uid)
	if err != nil || pod == nil {
		a.log.Debug("pod not described by the kubelet", "pid", f.pid, "pod_uid", uid, "err", err)
		return info, true
	}
	ns := pod.Namespace
	if ns == "" {
		ns = "_"
	}
	f.namespace = pod.Namespace
	lk := a.cfg.LabelKeys
	info.Job = "k8s/" + ns + "/" + uid
	info.Labels = pod.Labels
	info.StartMs = pod.StartMs
	info.Team = firstLabel(pod.Labels, lk.Team)
	info.Project = firstLabel(pod.Labels, lk.Project)
	info.Queue = firstLabel(pod.Labels, lk.Queue)
	info.Pool = firstLabel(pod.Labels, lk.Pool)
	info.ModelName = firstLabel(pod.Labels, lk.Model)
	info.Workload = firstLabel(pod.Labels, lk.Workload)
	info.EndReason = pod.EndReason
	f.podIP, f.annotations = pod.PodIP, pod.Annotations
	return info, false
}

// setOutput names the job's output counter from its pod's annotations and its
// labels (the annotations win), or from a Slurm job's comment: at the pod's
// address, else on this host. A counter that cannot be scraped is logged and
// left out; the job is attributed all the same.
func (a *Attributor) setOutput(info *collector.JobInfo, f *procFacts) {
	if info.Job == "" {
		return
	}
	keys := maps.Clone(info.Labels)
	if keys == nil {
		keys = map[string]string{}
	}
	maps.Copy(keys, f.annotations)
	if info.Source == schemas.SourceSlurm {
		maps.Copy(keys, parseComment(f.slurmComment))
	}
	host := f.podIP
	if host == "" {
		host = "127.0.0.1"
	}
	t, err := outputTarget(keys, host)
	if err != nil {
		a.log.Warn("job names an output counter that cannot be scraped; no output is reported for it", "job", info.Job, "err", err)
		return
	}
	info.Output = t
}

// EndReason returns how the kubelet says a pod ended, asking it afresh (at most
// every KubeletMinRefresh): why its containers last terminated (OOMKilled, Error,
// DeadlineExceeded), and, once its phase is Succeeded or Failed, that status and
// the exit code. Other jobs, and pods it does not describe, get what attribution
// knew (info.EndReason).
func (a *Attributor) EndReason(ctx context.Context, info collector.JobInfo) collector.JobEnd {
	end := collector.JobEnd{Reason: info.EndReason}
	uid, ok := strings.CutPrefix(info.Job, "k8s/")
	if !ok || a.kube == nil {
		return end
	}
	if i := strings.LastIndexByte(uid, '/'); i >= 0 {
		uid = uid[i+1:]
	}
	pod, err := a.kube.refresh(ctx, uid)
	if err != nil || pod == nil {
		return end
	}
	if pod.EndReason != "" {
		end.Reason = pod.EndReason
	}
	switch pod.Phase {
	case "Succeeded":
		end.Status = schemas.StatusSucceeded
	case "Failed":
		end.Status, end.ExitCode = schemas.StatusFailed, pod.ExitCode
	}
	return end
}

// slurmJob attributes a Slurm task: "slurm/<cluster>/<job id>". The job ID comes
// from the cgroup when it names one (it cannot be forged by the job), else from
// SLURM_JOB_ID; the environment's other SLURM_* variables are used only when they
// belong to that same job.
func (a *Attributor) slurmJob(f *procFacts) collector.JobInfo {
	env := f.env
	jobID, envOK := env.SlurmJobID, true
	if f.cgroup.Kind == cgroupSlurm {
		jobID, envOK = f.cgroup.SlurmJobID, env.SlurmJobID == f.cgroup.SlurmJobID
	}
	if !envOK && a.cfg.SlurmJobDir != "" {
		// The prolog's file is root's, like the cgroup: it may stand in for an
		// environment that is unreadable or names another job.
		if fe, err := readSlurmJobFile(a.cfg.SlurmJobDir, jobID); err == nil {
			env, envOK = fe, true
		} else {
			a.log.Debug("no slurm job file", "job", jobID, "err", err)
		}
	}
	cluster := a.cfg.Cluster
	info := collector.JobInfo{Source: schemas.SourceSlurm}
	labels := map[string]string{}
	if f.cgroup.SlurmUID != "" {
		labels["slurm.uid"] = f.cgroup.SlurmUID
	}
	f.slurmComment = env.SlurmComment
	if f.slurmComment == "" && a.cfg.SlurmJobDir != "" {
		if fe, err := readSlurmJobFile(a.cfg.SlurmJobDir, jobID); err == nil {
			f.slurmComment = fe.SlurmComment
		}
	}
	if envOK {
		if env.SlurmCluster != "" {
			cluster = env.SlurmCluster
		}
		info.Project, info.Queue = env.SlurmAccount, env.SlurmPartition
		f.slurmAccount, f.slurmPartition = env.SlurmAccount, env.SlurmPartition
		for k, v := range map[string]string{"slurm.user": env.SlurmUser, "slurm.account": env.SlurmAccount, "slurm.partition": env.SlurmPartition, "slurm.gpus": env.SlurmJobGPUs} {
			if v != "" {
				labels[k] = v
			}
		}
		if s, err := strconv.ParseInt(env.SlurmStartTime, 10, 64); err == nil && s > 0 {
			if ms, err := schemas.SecondsToMillis("SLURM_JOB_START_TIME", s); err == nil {
				info.StartMs = ms
			}
		}
	}
	if len(labels) > 0 {
		info.Labels = labels
	}
	info.Job = "slurm/" + cluster + "/" + jobID
	return info
}

// fillEmpty sets each of info's ownership fields that is empty to the given value.
func fillEmpty(info *collector.JobInfo, team, project, queue, pool, model, workload string) {
	for _, f := range [...]struct {
		dst *string
		v   string
	}{
		{&info.Team, team}, {&info.Project, project}, {&info.Queue, queue},
		{&info.Pool, pool}, {&info.ModelName, model}, {&info.Workload, workload},
	} {
		if *f.dst == "" {
			*f.dst = f.v
		}
	}
}

// firstLabel returns the value of the first of keys that labels has.
func firstLabel(labels map[string]string, keys []string) string {
	for _, k := range keys {
		if v, ok := labels[k]; ok && v != "" {
			return v
		}
	}
	return ""
}

// validEnvJob reports whether a GPUPOOL_JOB value may go into a job key: printable,
// without spaces, not too long.
func validEnvJob(s string) bool {
	if len(s) > maxEnvJobBytes {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// procFacts is what is known of one process while it is attributed; the
// executable, command line and user ID are read only if a mapping rule asks.
type procFacts struct {
	fs      procFS
	pid     uint32
	startMs int64
	node    string
	cluster string
	cgroup  cgroupInfo
	env     envInfo
	// Set by the Kubernetes and Slurm steps for mapping rules to match on.
	namespace, slurmAccount, slurmPartition string
	// Set by the Kubernetes and Slurm steps for the job's output counter.
	podIP, slurmComment string
	annotations         map[string]string

	exeVal, cmdVal     string
	uidVal             uint32
	exeRead, cmdRead   bool
	uidRead, uidReadOK bool
}

func (f *procFacts) exe() string {
	if !f.exeRead {
		f.exeVal, f.exeRead = f.fs.exeName(f.pid), true
	}
	return f.exeVal
}

func (f *procFacts) cmdline() string {
	if !f.cmdRead {
		f.cmdVal, f.cmdRead = f.fs.cmdline(f.pid), true
	}
	return f.cmdVal
}

func (f *procFacts) uid() (uint32, bool) {
	if !f.uidRead {
		f.uidVal, f.uidReadOK = f.fs.processUID(f.pid)
		f.uidRead = true
	}
	return f.uidVal, f.uidReadOK
}

// placeholderFunc returns the values of a rule template's placeholders.
func (f *procFacts) placeholderFunc(groups map[string]string) func(string) string {
	return func(name string) string {
		switch name {
		case "node":
			return f.node
		case "cluster":
			return f.cluster
		case "pid":
			return strconv.FormatUint(uint64(f.pid), 10)
		case "start":
			return strconv.FormatInt(f.startMs/1000, 10)
		case "uid":
			if uid, ok := f.uid(); ok {
				return strconv.FormatUint(uint64(uid), 10)
			}
			return ""
		case "exe":
			return f.exe()
		}
		return groups[name]
	}
}
