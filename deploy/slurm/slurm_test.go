package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/collector/attribution"
)

var scripts = []string{"prolog.sh", "epilog.sh"}

// TestShellcheck runs shellcheck on the scripts. Without shellcheck it skips,
// except in CI (CI=true), where make deps installs it and its absence fails.
func TestShellcheck(t *testing.T) {
	bin, err := exec.LookPath("shellcheck")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("shellcheck not found: make deps installs it (Debian package shellcheck)")
		}
		t.Skip("shellcheck not found (apt-get install shellcheck, or make deps)")
	}
	out, err := exec.Command(bin, append([]string{"--shell=sh", "--severity=style"}, scripts...)...).CombinedOutput()
	if err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// run runs a script with only the given environment (and a PATH for the shell's
// tools), as slurmd does, and returns its stderr.
func run(t *testing.T, script string, env ...string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", script)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s exited with %v (a prolog or epilog that fails drains the node)\n%s", script, err, stderr.String())
	}
	return stderr.String()
}

// procOf makes a procfs fixture with one process, PID 1009 (the collector's
// attribution fixture of a Slurm task under cgroup v2), in the cgroup of job.
func procOf(t *testing.T, job string) string {
	t.Helper()
	src := "../../collector/attribution/testdata/proc"
	root := filepath.Join(t.TempDir(), "proc")
	for _, f := range []string{"stat", "1009/stat", "1009/status", "1009/cmdline", "1009/comm"} {
		b, err := os.ReadFile(filepath.Join(src, f))
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
	// No environ: another user's, unreadable to a collector without CAP_SYS_PTRACE.
	cg := "0::/system.slice/slurmstepd.scope/job_" + job + "/step_0/user/task_0\n"
	if err := os.WriteFile(filepath.Join(root, "1009", "cgroup"), []byte(cg), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestPrologEpilogAttribution runs the prolog with the variables slurmd gives it,
// attributes a task of the job whose environment the collector cannot read, and
// checks it gets the job's owner and GPUs; after the epilog the same task has the
// job from its cgroup and nothing more.
func TestPrologEpilogAttribution(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "slurm")
	jobEnv := []string{"GPUPOOL_SLURM_DIR=" + dir, "SLURM_JOB_ID=4242", "SLURM_CLUSTER_NAME=hpc1", "SLURM_JOB_ACCOUNT=vision",
		"SLURM_JOB_PARTITION=a100", "SLURM_JOB_USER=alice", "SLURM_JOB_GPUS=0,1",
		"SLURM_JOB_COMMENT=nightly; gpupool.io/output-metric=train_samples_total,gpupool.io/output-port=9100"}
	if msg := run(t, "prolog.sh", jobEnv...); msg != "" {
		t.Errorf("prolog wrote to stderr: %s", msg)
	}
	var output string // the job's output counter, from its comment
	attribute := func() (job, project, queue string, labels map[string]string) {
		cfg := attribution.DefaultConfig()
		cfg.ProcRoot, cfg.Cluster, cfg.Node, cfg.SlurmJobDir = procOf(t, "4242"), "default", "gpu-01", dir
		a, err := attribution.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		info, err := a.Attribute(t.Context(), 1009)
		if err != nil {
			t.Fatal(err)
		}
		output = info.Output.URL + " " + info.Output.Metric + " " + info.Output.Unit
		return info.Job, info.Project, info.Queue, info.Labels
	}
	job, project, queue, labels := attribute()
	if job != "slurm/hpc1/4242" || project != "vision" || queue != "a100" || labels["slurm.user"] != "alice" || labels["slurm.gpus"] != "0,1" {
		t.Errorf("after the prolog: job %q project %q queue %q labels %v; want slurm/hpc1/4242, vision, a100, alice's GPUs 0,1", job, project, queue, labels)
	}
	if want := "http://127.0.0.1:9100/metrics train_samples_total samples"; output != want {
		t.Errorf("output counter from the job comment: %q, want %q", output, want)
	}
	if fi, err := os.Stat(filepath.Join(dir, "4242")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("job file: %v, mode %v; want 0644 (the collector may run as another user)", err, fi)
	}

	run(t, "epilog.sh", jobEnv...)
	if _, err := os.Stat(filepath.Join(dir, "4242")); !os.IsNotExist(err) {
		t.Errorf("job file after the epilog: %v, want it removed", err)
	}
	job, project, _, labels = attribute()
	if job != "slurm/default/4242" || project != "" || labels["slurm.user"] != "" {
		t.Errorf("after the epilog: job %q project %q labels %v; want the cgroup's job alone", job, project, labels)
	}
}

// TestScriptsRefuseBadJobIDs checks a job ID that is not a number writes or
// removes nothing (it would name a path) and still exits 0.
func TestScriptsRefuseBadJobIDs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "slurm")
	victim := filepath.Join(filepath.Dir(dir), "keep")
	if err := os.WriteFile(victim, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "../keep", "42; rm -rf /", "4 2"} {
		for _, s := range scripts {
			if msg := run(t, s, "GPUPOOL_SLURM_DIR="+dir, "SLURM_JOB_ID="+id); !strings.Contains(msg, "not a job number") {
				t.Errorf("%s with SLURM_JOB_ID=%q: stderr %q, want it refused", s, id, msg)
			}
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the epilog removed a file outside its directory: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files written for bad job IDs: %v", ents)
	}
}

// TestPrologKeepsValuesOnOneLine checks a value with a newline cannot add a line
// (and so a variable) of its own to the job file.
func TestPrologKeepsValuesOnOneLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "slurm")
	run(t, "prolog.sh", "GPUPOOL_SLURM_DIR="+dir, "SLURM_JOB_ID=7", "SLURM_JOB_ACCOUNT=a\nSLURM_JOB_USER=mallory")
	b, err := os.ReadFile(filepath.Join(dir, "7"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "SLURM_JOB_USER=") && strings.TrimSpace(line) != "SLURM_JOB_USER=" {
			t.Errorf("account's newline made a user line: %q", b)
		}
	}
	if !strings.Contains(string(b), "SLURM_JOB_ACCOUNT=aSLURM_JOB_USER=mallory\n") {
		t.Errorf("job file %q: want the account on one line", b)
	}
}
