package attribution

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Config configures an Attributor.
type Config struct {
	// ProcRoot is where procfs is mounted: "/proc" on a host, "/host/proc" in a
	// container that mounts the host's, a fixture tree in tests.
	ProcRoot string `yaml:"proc_root"`
	// Cluster names the cluster; it is the Slurm cluster in job keys when a process
	// has no SLURM_CLUSTER_NAME.
	Cluster string `yaml:"cluster"`
	// Node names this node; it goes into "proc/<node>/…" job keys.
	Node string `yaml:"node"`
	// MappingFile is an optional YAML (or JSON) file of rules that attribute plain
	// processes and fill ownership left empty by Kubernetes or Slurm; see mapping.go
	// for the format. Empty: no rules.
	MappingFile string `yaml:"mapping_file"`
	// SlurmJobDir is where deploy/slurm/prolog.sh writes one file per job running on
	// this node (<dir>/<job id>: its account, partition, user, cluster and GPUs),
	// and the epilog removes it. A Slurm process whose environment cannot be read (a
	// collector without CAP_SYS_PTRACE) is attributed from its cgroup and this file.
	// Empty: not used.
	SlurmJobDir string `yaml:"slurm_job_dir"`

	// KubeletURL is the node's kubelet, e.g. "https://127.0.0.1:10250"; its /pods
	// endpoint names each pod's namespace and labels. Empty: pods are attributed as
	// "k8s/_/<pod uid>" with no labels.
	KubeletURL string `yaml:"kubelet_url"`
	// KubeletTokenFile holds the bearer token sent to the kubelet (a service account
	// token allowed nodes/proxy or nodes/pods); it is re-read on every fetch, so a
	// rotated projected token is picked up. Empty: no Authorization header.
	KubeletTokenFile string `yaml:"kubelet_token_file"`
	// KubeletCAFile is the PEM bundle that signs the kubelet's serving certificate;
	// empty: the system roots.
	KubeletCAFile string `yaml:"kubelet_ca_file"`
	// KubeletInsecureSkipVerify skips verifying the kubelet's certificate, which is
	// often self-signed.
	KubeletInsecureSkipVerify bool `yaml:"kubelet_insecure_skip_verify"`
	// KubeletTimeout bounds one /pods request.
	KubeletTimeout time.Duration `yaml:"kubelet_timeout"`
	// KubeletMinRefresh is the least time between two /pods requests made because a
	// process belongs to a pod the cached list does not have (and between retries of
	// a failed request).
	KubeletMinRefresh time.Duration `yaml:"kubelet_min_refresh"`

	// LabelKeys name the pod labels that give a job's team, project and so on.
	LabelKeys LabelKeys `yaml:"label_keys"`

	// CacheTTL is how long the kubelet's pod list and an attributed PID are trusted
	// before they are read again (a cached PID is re-checked against its process
	// start time on every call regardless).
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// EvictAfter drops a cached PID that has not been asked about for this long.
	EvictAfter time.Duration `yaml:"evict_after"`
	// RecheckAfter is how often a cached PID's start time is read again to catch a
	// reused PID. Reading /proc/<pid>/stat for every GPU process on every tick is most
	// of attribution's cost; a PID reused by another GPU process within this window
	// keeps the old attribution until the next check.
	RecheckAfter time.Duration `yaml:"recheck_after"`
}

// LabelKeys lists, for each field of a job, the pod label keys that may hold it;
// the first key present on the pod wins.
type LabelKeys struct {
	Team     []string `yaml:"team"`
	Project  []string `yaml:"project"`
	Queue    []string `yaml:"queue"`
	Pool     []string `yaml:"pool"`
	Model    []string `yaml:"model"`
	Workload []string `yaml:"workload"`
}

// DefaultLabelKeys returns the label keys used when none are configured: gpupool's
// own keys first, then common conventions (Kueue and Volcano queues, KServe
// inference services, app.kubernetes.io/part-of as the project).
func DefaultLabelKeys() LabelKeys {
	return LabelKeys{
		Team:     []string{"gpupool.io/team", "team", "owner-team"},
		Project:  []string{"gpupool.io/project", "project", "app.kubernetes.io/part-of"},
		Queue:    []string{"gpupool.io/queue", "kueue.x-k8s.io/queue-name", "volcano.sh/queue-name", "queue"},
		Pool:     []string{"gpupool.io/pool", "pool"},
		Model:    []string{"gpupool.io/model", "model", "serving.kserve.io/inferenceservice"},
		Workload: []string{"gpupool.io/workload", "workload"},
	}
}

// DefaultConfig returns the defaults: the host's /proc, no kubelet, no mapping
// file, DefaultLabelKeys, a one-minute cache. Node is left empty: set it.
func DefaultConfig() Config {
	return Config{
		ProcRoot:          "/proc",
		Cluster:           "default",
		KubeletTimeout:    5 * time.Second,
		KubeletMinRefresh: 5 * time.Second,
		LabelKeys:         DefaultLabelKeys(),
		CacheTTL:          time.Minute,
		EvictAfter:        5 * time.Minute,
		RecheckAfter:      10 * time.Second,
	}
}

// Validate reports every invalid field; each line of the error starts with the
// field's yaml name.
func (c Config) Validate() error {
	var errs []error
	if c.ProcRoot == "" {
		errs = append(errs, schemas.Field("proc_root", errors.New(`empty (use "/proc", or the host's procfs mounted into the container)`)))
	}
	if c.Cluster == "" {
		errs = append(errs, schemas.Field("cluster", errors.New("empty")))
	}
	if c.Node == "" {
		errs = append(errs, schemas.Field("node", errors.New("empty (set it to the host name)")))
	}
	if c.KubeletURL != "" {
		u, err := url.Parse(c.KubeletURL)
		switch {
		case err != nil:
			errs = append(errs, schemas.Fieldf("kubelet_url", "%w", err))
		case u.Scheme != "https" && u.Scheme != "http":
			errs = append(errs, schemas.Fieldf("kubelet_url", "%q must start with https:// (or http:// for the read-only port)", c.KubeletURL))
		case u.Host == "":
			errs = append(errs, schemas.Fieldf("kubelet_url", "%q has no host (e.g. https://127.0.0.1:10250)", c.KubeletURL))
		}
		if c.KubeletTimeout <= 0 {
			errs = append(errs, schemas.Fieldf("kubelet_timeout", "%v must be positive", c.KubeletTimeout))
		}
		if c.KubeletMinRefresh < 0 {
			errs = append(errs, schemas.Fieldf("kubelet_min_refresh", "%v must not be negative", c.KubeletMinRefresh))
		}
	}
	for _, f := range []struct {
		name string
		keys []string
	}{
		{"team", c.LabelKeys.Team}, {"project", c.LabelKeys.Project}, {"queue", c.LabelKeys.Queue},
		{"pool", c.LabelKeys.Pool}, {"model", c.LabelKeys.Model}, {"workload", c.LabelKeys.Workload},
	} {
		for i, k := range f.keys {
			if k == "" {
				errs = append(errs, fmt.Errorf("label_keys.%s[%d]: empty label key", f.name, i))
			}
		}
	}
	if c.CacheTTL <= 0 {
		errs = append(errs, schemas.Fieldf("cache_ttl", "%v must be positive", c.CacheTTL))
	}
	if c.RecheckAfter < 0 || c.RecheckAfter > c.CacheTTL {
		errs = append(errs, schemas.Fieldf("recheck_after", "%v must be within 0..cache_ttl (0 checks every call)", c.RecheckAfter))
	}
	if c.EvictAfter <= 0 {
		errs = append(errs, schemas.Fieldf("evict_after", "%v must be positive", c.EvictAfter))
	}
	return errors.Join(errs...)
}
