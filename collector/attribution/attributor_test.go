package attribution

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/schemas"
)

const (
	podA = "8d2f3e1a-7b4c-4e5f-9a0b-1c2d3e4f5a6b"
	podB = "3b7e9c2d-1f4a-4d6b-8e2c-5a9f0b1c7d3e"
	podC = "c0ffee00-1234-4abc-8def-0123456789ab"
	podD = "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9"
	podE = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
	podF = "0f1e2d3c-4b5a-4968-8776-655443322110"
)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

// procStartMs is the start of a fixture process whose stat says ticks.
func procStartMs(ticks int64) int64 { return testBootMs + ticks*10 }

var podALabels = map[string]string{
	"gpupool.io/team": "vision", "team": "not-this-one", "app.kubernetes.io/part-of": "imagenet",
	"kueue.x-k8s.io/queue-name": "team-vision", "workload": "training",
	"batch.kubernetes.io/job-name": "train-resnet",
}

func TestAttributeFixtures(t *testing.T) {
	kube := newKubeletServer(t)
	cfg := testConfig()
	kube.configure(&cfg)
	cfg.MappingFile = "testdata/mapping.yaml"
	a, err := New(cfg, WithClock(newFakeClock().Now))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		pid     uint32
		want    collector.JobInfo
		wantErr error
	}{
		{"k8s systemd containerd burstable v2", 1001, collector.JobInfo{
			Job: "k8s/ml-training/" + podA, Source: schemas.SourceKubernetes, Team: "vision", Project: "imagenet",
			Queue: "team-vision", ModelName: "resnet-152", Workload: "training", Labels: podALabels,
			StartMs: ms("2026-01-02T08:00:05Z"), Cgroup: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8d2f3e1a_7b4c_4e5f_9a0b_1c2d3e4f5a6b.slice",
		}, nil},
		{"k8s systemd crio besteffort v2", 1002, collector.JobInfo{
			Job: "k8s/inference/" + podB, Source: schemas.SourceKubernetes, Team: "nlp", Pool: "online-inference",
			ModelName: "llama-3-8b", Workload: "inference",
			Labels: map[string]string{
				"team": "nlp", "serving.kserve.io/inferenceservice": "llama-3-8b", "gpupool.io/pool": "online-inference",
				"gpupool.io/workload": "inference", "component": "predictor",
			},
			StartMs: ms("2026-01-02T09:30:00Z"),
			Output: collector.OutputTarget{
				URL: "http://10.244.3.41:8000/metrics", Metric: "vllm:generation_tokens_total", Unit: "tokens",
			}, Cgroup: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod3b7e9c2d_1f4a_4d6b_8e2c_5a9f0b1c7d3e.slice",
		}, nil},
		{"k8s systemd docker guaranteed v1, team from mapping namespace rule", 1003, collector.JobInfo{
			Job: "k8s/research/" + podC, Source: schemas.SourceKubernetes, Team: "research-lab", Project: "notebooks",
			Labels:  map[string]string{"app": "jupyter", "cost-center": "rnd-7"},
			StartMs: ms("2026-01-03T10:00:00Z"), Cgroup: "/kubepods.slice/kubepods-podc0ffee00_1234_4abc_8def_0123456789ab.slice",
		}, nil},
		{"k8s cgroupfs burstable v1", 1004, collector.JobInfo{
			Job: "k8s/default/" + podD, Source: schemas.SourceKubernetes, Project: "ddp-bench",
			Labels: map[string]string{"project": "ddp-bench"}, StartMs: ms("2026-01-03T11:00:00Z"), EndReason: "OOMKilled", Cgroup: "/kubepods/burstable/pod5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
		}, nil},
		{"k8s cgroupfs guaranteed, pod unknown to the kubelet", 1005, collector.JobInfo{
			Job: "k8s/_/" + podE, Source: schemas.SourceKubernetes, Cgroup: "/kubepods/pod9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
		}, nil},
		{"docker without GPUPOOL_JOB is unattributed", 1006, collector.JobInfo{}, nil},
		{"docker systemd scope with GPUPOOL_ env", 1007, collector.JobInfo{
			Job: "proc/gpu-node-a/sd-finetune-7", Source: schemas.SourceProcess, Team: "genai", Project: "diffusion",
			ModelName: "sdxl", Workload: "training", StartMs: procStartMs(7400000),
		}, nil},
		{"slurm cgroup v1 with environment", 1008, collector.JobInfo{
			Job: "slurm/hpc1/4242", Source: schemas.SourceSlurm, Project: "climate", Queue: "a100",
			Labels: map[string]string{
				"slurm.uid": "1000", "slurm.user": "alice", "slurm.account": "climate", "slurm.partition": "a100",
			},
			StartMs: 1767300000 * 1000, Cgroup: "/slurm/uid_1000/job_4242",
		}, nil},
		{"slurmstepd cgroup v2, environ unreadable", 1009, collector.JobInfo{
			Job: "slurm/east-1/5151", Source: schemas.SourceSlurm, Cgroup: "/system.slice/slurmstepd.scope/job_5151",
		}, nil},
		{"slurm cgroup v2 batch step, cluster from config", 1010, collector.JobInfo{
			Job: "slurm/east-1/6000", Source: schemas.SourceSlurm, Project: "genomics", Queue: "h100",
			Labels: map[string]string{"slurm.user": "bob", "slurm.account": "genomics", "slurm.partition": "h100"}, Cgroup: "/system.slice/slurmstepd.scope/job_6000",
		}, nil},
		{"user slice with GPUPOOL_JOB", 1011, collector.JobInfo{
			Job: "proc/gpu-node-a/bert-sweep-12", Source: schemas.SourceProcess, Team: "nlp",
			Project: "search-ranking", ModelName: "bert-large", StartMs: procStartMs(7800000),
		}, nil},
		{"user slice without anything is unattributed", 1012, collector.JobInfo{}, nil},
		{"mapping rule on exe and cmdline", 1013, collector.JobInfo{
			Job: "proc/gpu-node-a/vllm-1002", Source: schemas.SourceProcess, Team: "inference",
			Pool: "online-inference", ModelName: "meta-llama/Llama-3.1-8B", Workload: "inference",
			StartMs: procStartMs(8000000),
		}, nil},
		{"mapping rule on cgroup prefix and uid, default job key", 1014, collector.JobInfo{
			Job: "proc/gpu-node-a/1014/1767306600", Source: schemas.SourceProcess, Team: "platform",
			Project: "triton", StartMs: procStartMs(8100000),
		}, nil},
		{"SLURM_JOB_ID without slurm cgroup, team from mapping", 1015, collector.JobInfo{
			Job: "slurm/hpc2/8811", Source: schemas.SourceSlurm, Team: "physics-dept", Project: "physics",
			Labels: map[string]string{"slurm.account": "physics"},
		}, nil},
		{"unparsable cgroup file", 1016, collector.JobInfo{}, ErrBadCgroup},
		{"kind cluster nested kubelet slice, pod not listed", 1017, collector.JobInfo{
			Job: "k8s/_/" + podF, Source: schemas.SourceKubernetes, Cgroup: "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod0f1e2d3c_4b5a_4968_8776_655443322110.slice",
		}, nil},
		{"slurm cgroup wins over a stale SLURM_JOB_ID", 1018, collector.JobInfo{
			Job: "slurm/east-1/7000", Source: schemas.SourceSlurm, Labels: map[string]string{"slurm.uid": "1001"}, Cgroup: "/slurm/uid_1001/job_7000",
		}, nil},
		{"pod labels win over GPUPOOL_ env, which fills the rest", 1019, collector.JobInfo{
			Job: "k8s/ml-training/" + podA, Source: schemas.SourceKubernetes, Team: "vision", Project: "imagenet",
			Queue: "team-vision", Pool: "exp-training", Workload: "training", Labels: podALabels,
			StartMs: ms("2026-01-02T08:00:05Z"), Cgroup: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8d2f3e1a_7b4c_4e5f_9a0b_1c2d3e4f5a6b.slice",
		}, nil},
		{"vanished pid", 99999, collector.JobInfo{}, ErrNoProcess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Twice: the second answer comes from the cache and must be the same.
			for round := range 2 {
				got, err := a.Attribute(t.Context(), tt.pid)
				if tt.wantErr != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("round %d: err = %v, want %v", round, err, tt.wantErr)
					}
				} else if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("round %d:\n got %+v\nwant %+v", round, got, tt.want)
				}
			}
		})
	}
	if n := kube.requests.Load(); n > 3 {
		t.Errorf("kubelet asked %d times, want the pod list fetched once (plus rate-limited retries)", n)
	}
}

func TestAttributeWithoutKubelet(t *testing.T) {
	a, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pid  uint32
		want collector.JobInfo
	}{
		{"systemd driver", 1001, collector.JobInfo{Job: "k8s/_/" + podA, Source: schemas.SourceKubernetes, ModelName: "resnet-152",
			Cgroup: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8d2f3e1a_7b4c_4e5f_9a0b_1c2d3e4f5a6b.slice"}},
		{"cgroupfs driver", 1004, collector.JobInfo{Job: "k8s/_/" + podD, Source: schemas.SourceKubernetes,
			Cgroup: "/kubepods/burstable/pod" + podD}},
		{"no mapping file", 1013, collector.JobInfo{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Attribute(t.Context(), tt.pid)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestAttributeKubeletUnreachable(t *testing.T) {
	kube := newKubeletServer(t)
	clock := newFakeClock()
	cfg := testConfig()
	kube.configure(&cfg)
	kube.fail.Store(true)
	a, err := New(cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Attribute(t.Context(), 1001)
	if err != nil {
		t.Fatal(err)
	}
	if got.Job != "k8s/_/"+podA || got.Source != schemas.SourceKubernetes {
		t.Fatalf("while the kubelet fails: %+v, want k8s/_/%s from kubernetes", got, podA)
	}
	// Another process of a pod right away: no second request (rate limit).
	if _, err := a.Attribute(t.Context(), 1004); err != nil {
		t.Fatal(err)
	}
	if n := kube.requests.Load(); n != 1 {
		t.Fatalf("%d kubelet requests within kubelet_min_refresh, want 1", n)
	}
	// The kubelet recovers; after kubelet_min_refresh the pending PID is asked again.
	kube.fail.Store(false)
	clock.Advance(cfg.KubeletMinRefresh)
	got, err = a.Attribute(t.Context(), 1001)
	if err != nil {
		t.Fatal(err)
	}
	if got.Job != "k8s/ml-training/"+podA || got.Team != "vision" {
		t.Fatalf("after the kubelet recovered: %+v, want k8s/ml-training/%s of team vision", got, podA)
	}
	if s := a.Stats(); s.KubeletFetches != 2 || s.KubeletFailures != 1 {
		t.Errorf("stats %+v, want 2 fetches, 1 failure", s)
	}
}

func TestAttributeCache(t *testing.T) {
	root := copyProc(t, "1011")
	clock := newFakeClock()
	cfg := testConfig()
	cfg.ProcRoot = root
	a, err := New(cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	first, err := a.Attribute(ctx, 1011)
	if err != nil || first.Job != "proc/gpu-node-a/bert-sweep-12" {
		t.Fatalf("first: %+v, %v", first, err)
	}
	environ := filepath.Join(root, "1011", "environ")

	t.Run("same process answered from the cache", func(t *testing.T) {
		writeFile(t, environ, "GPUPOOL_JOB=changed\x00")
		got, err := a.Attribute(ctx, 1011)
		if err != nil || got.Job != first.Job {
			t.Fatalf("got %+v, %v; want the cached %s", got, err, first.Job)
		}
		if s := a.Stats(); s.Hits != 1 || s.Misses != 1 {
			t.Errorf("stats %+v, want 1 hit and 1 miss", s)
		}
	})
	t.Run("re-read after cache_ttl", func(t *testing.T) {
		clock.Advance(cfg.CacheTTL)
		got, err := a.Attribute(ctx, 1011)
		if err != nil || got.Job != "proc/gpu-node-a/changed" {
			t.Fatalf("got %+v, %v; want proc/gpu-node-a/changed", got, err)
		}
	})
	t.Run("reused pid is attributed afresh", func(t *testing.T) {
		stat := filepath.Join(root, "1011", "stat")
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		// The new process started later: field 22 changes.
		writeFile(t, stat, string(replaceOnce(t, b, " 7800000 ", " 9900000 ")))
		writeFile(t, environ, "GPUPOOL_JOB=new-tenant\x00")
		// Within recheck_after the start time is not read again: the old answer stands.
		if got, err := a.Attribute(ctx, 1011); err != nil || got.Job != "proc/gpu-node-a/changed" {
			t.Fatalf("within recheck_after: got %+v, %v; want the cached job", got, err)
		}
		clock.Advance(cfg.RecheckAfter)
		got, err := a.Attribute(ctx, 1011)
		if err != nil {
			t.Fatal(err)
		}
		if got.Job != "proc/gpu-node-a/new-tenant" || got.StartMs != procStartMs(9900000) {
			t.Fatalf("got %+v, want the new process's job and start", got)
		}
	})
	t.Run("vanished pid is dropped", func(t *testing.T) {
		if err := os.RemoveAll(filepath.Join(root, "1011")); err != nil {
			t.Fatal(err)
		}
		clock.Advance(cfg.RecheckAfter)
		got, err := a.Attribute(ctx, 1011)
		if !errors.Is(err, ErrNoProcess) || got.Job != "" {
			t.Fatalf("got %+v, %v; want ErrNoProcess", got, err)
		}
		if n := a.Stats().Cached; n != 0 {
			t.Errorf("%d cached entries, want 0", n)
		}
	})
}

func replaceOnce(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	if !strings.Contains(string(b), old) {
		t.Fatalf("%q not in %q", old, b)
	}
	return []byte(strings.Replace(string(b), old, new, 1))
}

func TestForgetAndEviction(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig()
	a, err := New(cfg, WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []uint32{1001, 1007, 1011, 1012} {
		if _, err := a.Attribute(t.Context(), pid); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.Forget([]uint32{1001, 1007, 4}); n != 2 {
		t.Fatalf("Forget dropped %d, want 2", n)
	}
	if n := a.Stats().Cached; n != 2 {
		t.Fatalf("%d cached after Forget, want 2", n)
	}
	// 1001 keeps being asked for; 1007 is not. Misses sweep at most every
	// evict_after/2, so an idle entry is gone within 1.5 × evict_after.
	for range 6 {
		clock.Advance(cfg.EvictAfter / 4)
		if _, err := a.Attribute(t.Context(), 1001); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Attribute(t.Context(), 1012); err != nil {
		t.Fatal(err)
	}
	a.cache.mu.RLock()
	_, has1007 := a.cache.entries[1007]
	_, has1001 := a.cache.entries[1001]
	a.cache.mu.RUnlock()
	if has1007 || !has1001 {
		t.Errorf("after evict_after: 1007 cached %v (want false), 1001 cached %v (want true)", has1007, has1001)
	}
	if s := a.Stats(); s.Evicted != 3 {
		t.Errorf("evicted %d, want 3", s.Evicted)
	}
}

func TestEnvironUnreadable(t *testing.T) {
	t.Run("read error", func(t *testing.T) {
		a, err := New(testConfig())
		if err != nil {
			t.Fatal(err)
		}
		read := a.fs.readFile
		a.fs.readFile = func(name string) ([]byte, error) {
			if filepath.Base(name) == "environ" {
				return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrPermission}
			}
			return read(name)
		}
		// A Slurm task keeps its cgroup job; a plain process loses GPUPOOL_JOB.
		got, err := a.Attribute(t.Context(), 1008)
		if err != nil || got.Job != "slurm/east-1/4242" || got.Project != "" {
			t.Errorf("slurm task: %+v, %v; want slurm/east-1/4242 with no project", got, err)
		}
		got, err = a.Attribute(t.Context(), 1011)
		if err != nil || got.Job != "" {
			t.Errorf("plain process: %+v, %v; want unattributed, no error", got, err)
		}
		if n := a.Stats().EnvironUnreadable; n != 2 {
			t.Errorf("EnvironUnreadable = %d, want 2", n)
		}
	})
	t.Run("zero-permission file", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("running as root: a mode-000 file is still readable (the read-error case covers EACCES)")
		}
		root := copyProc(t, "1008")
		if err := os.Chmod(filepath.Join(root, "1008", "environ"), 0); err != nil {
			t.Fatal(err)
		}
		cfg := testConfig()
		cfg.ProcRoot = root
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.Attribute(t.Context(), 1008)
		if err != nil || got.Job != "slurm/east-1/4242" {
			t.Errorf("%+v, %v; want slurm/east-1/4242", got, err)
		}
	})
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   error
	}{
		{"proc root without stat", func(c *Config) { c.ProcRoot = t.TempDir() }, nil},
		{"missing mapping file", func(c *Config) { c.MappingFile = "testdata/nope.yaml" }, ErrMapping},
		{"missing CA file", func(c *Config) { c.KubeletURL = "https://127.0.0.1:10250"; c.KubeletCAFile = "testdata/nope.crt" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.mutate(&cfg)
			_, err := New(cfg)
			if err == nil {
				t.Fatal("New succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// BenchmarkAttributeCached measures what every process costs every tick once it is
// attributed: a cache lookup and one read of /proc/<pid>/stat.
func BenchmarkAttributeCached(b *testing.B) {
	a, err := New(testConfig())
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	if _, err := a.Attribute(ctx, 1001); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Attribute(ctx, 1001); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAttributeMiss measures a first attribution (no kubelet).
func BenchmarkAttributeMiss(b *testing.B) {
	a, err := New(testConfig())
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		a.Forget(nil)
		if _, err := a.Attribute(ctx, 1008); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAttributeConcurrent runs attributions, Forget and Stats from several
// goroutines (run it with -race) and checks every answer against a sequential one.
func TestAttributeConcurrent(t *testing.T) {
	kube := newKubeletServer(t)
	cfg := testConfig()
	kube.configure(&cfg)
	cfg.MappingFile = "testdata/mapping.yaml"
	pids := []uint32{1001, 1002, 1004, 1007, 1008, 1011, 1013, 1014}
	want := map[uint32]collector.JobInfo{}
	seq, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if want[pid], err = seq.Attribute(t.Context(), pid); err != nil {
			t.Fatal(err)
		}
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				pid := pids[(g+i)%len(pids)]
				got, err := a.Attribute(t.Context(), pid)
				if err != nil {
					t.Error(err)
					return
				}
				if !reflect.DeepEqual(got, want[pid]) {
					t.Errorf("pid %d: %+v, want %+v", pid, got, want[pid])
					return
				}
				if i%50 == 0 {
					a.Forget(pids[:g%len(pids)])
					_ = a.Stats()
				}
			}
		})
	}
	wg.Wait()
}
