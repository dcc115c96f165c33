package attribution_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/collector/attribution"
	testslurm "github.com/gpupool/gpupool/testservers/slurm"
)

// TestLiveSlurmAttribution attributes the process of a real batch job (a
// one-node Slurm cluster, testservers/slurm, with gpupool's prolog
// and epilog installed as docs/slurm.md says): read as root, from its cgroup
// and environment; then from a copy of its /proc entry without the
// environment, as a collector without CAP_SYS_PTRACE sees it, from its cgroup
// (proctrack/cgroup: /slurm_<node>/uid_0/job_<id>/step_batch) and the
// prolog's file.
func TestLiveSlurmAttribution(t *testing.T) {
	deploy, err := filepath.Abs("../../deploy/slurm")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "slurm")
	wrapper := func(script string) string {
		return "#!/bin/sh\nGPUPOOL_SLURM_DIR='" + dir + "' exec '" + filepath.Join(deploy, script) + "'\n"
	}
	c := testslurm.Start(t, testslurm.Options{
		Prolog: map[string]string{"gpupool-prolog": wrapper("prolog.sh")},
		Epilog: map[string]string{"gpupool-epilog": wrapper("epilog.sh")},
	})
	pidFile := filepath.Join(t.TempDir(), "pid")
	id := c.Submit("--gres=gpu:a100:2", "--account=vision", "--wrap", "echo $$ > "+pidFile+"; exec sleep 600")
	c.WaitState(id, "RUNNING")
	var pid uint64
	if !c.Poll(func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
		_, ferr := os.Stat(filepath.Join(dir, id))
		return err == nil && ferr == nil
	}) {
		t.Fatalf("job %s: no PID in %s or no prolog file\n%s", id, pidFile, c.Logs())
	}
	cg, _ := os.ReadFile(filepath.Join("/proc", strconv.FormatUint(pid, 10), "cgroup"))

	attribute := func(procRoot string) (job, project, queue string, labels map[string]string) {
		t.Helper()
		cfg := attribution.DefaultConfig()
		cfg.ProcRoot, cfg.Cluster, cfg.Node, cfg.SlurmJobDir = procRoot, "default", c.Node, dir
		a, err := attribution.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		info, err := a.Attribute(t.Context(), uint32(pid))
		if err != nil {
			t.Fatalf("attribute PID %d (cgroup %q): %v", pid, cg, err)
		}
		return info.Job, info.Project, info.Queue, info.Labels
	}
	want := "slurm/" + c.Name + "/" + id
	check := func(how, job, project, queue string, labels map[string]string) {
		t.Helper()
		if job != want || project != "vision" || queue != c.Partition || labels["slurm.user"] != "root" || labels["slurm.gpus"] != "0,1" {
			t.Errorf("%s: job %q project %q queue %q labels %v; want %s, vision, %s, root's GPUs 0,1 (cgroup %q)",
				how, job, project, queue, labels, want, c.Partition, cg)
		}
	}
	job, project, queue, labels := attribute("/proc")
	check("from /proc", job, project, queue, labels)

	// The same process without its environment.
	root := filepath.Join(t.TempDir(), "proc")
	p := strconv.FormatUint(pid, 10)
	for _, f := range []string{"stat", p + "/stat", p + "/status", p + "/cmdline", p + "/comm", p + "/cgroup"} {
		b, err := os.ReadFile(filepath.Join("/proc", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	job, project, queue, labels = attribute(root)
	check("from the cgroup and the prolog's file", job, project, queue, labels)
	if !strings.Contains(string(cg), "/job_"+id+"/") {
		t.Errorf("the job's process is not in a job_%s cgroup: %q", id, cg)
	}
}
