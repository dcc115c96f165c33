package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	testslurm "github.com/gpupool/gpupool/testservers/slurm"
)

// TestLiveProlog runs the prolog and epilog under a real slurmd
// (testservers/slurm), installed as docs/slurm.md says: a wrapper in
// prolog.d and epilog.d that sets GPUPOOL_SLURM_DIR and runs the script. While a
// two-GPU batch job runs, its file names the job's account, partition, user,
// cluster and the GPU indices Slurm gave it; when it ends, the file is gone. A
// GPUPOOL_SLURM_DIR in slurmd's own environment does not reach the prolog:
// slurmd gives it a fresh environment, which is why the wrapper is needed.
func TestLiveProlog(t *testing.T) {
	abs := func(name string) string {
		p, err := filepath.Abs(name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	dir := filepath.Join(t.TempDir(), "slurm")
	envs := t.TempDir()
	t.Setenv("GPUPOOL_SLURM_DIR", filepath.Join(t.TempDir(), "never-used"))
	wrapper := func(script string) string {
		return "#!/bin/sh\nGPUPOOL_SLURM_DIR='" + dir + "' exec '" + abs(script) + "'\n"
	}
	c := testslurm.Start(t, testslurm.Options{
		Prolog: map[string]string{
			"00-env.sh":      "#!/bin/sh\nenv > '" + envs + "'/\"$SLURM_JOB_ID\"\n",
			"gpupool-prolog": wrapper("prolog.sh"),
		},
		Epilog: map[string]string{"gpupool-epilog": wrapper("epilog.sh")},
	})
	id := c.Submit("--gres=gpu:a100:2", "--account=vision", "--comment=gpupool.io/output-metric=steps_total", "--wrap", "sleep 600")
	c.WaitState(id, "RUNNING")
	// slurmd runs the prolog.d scripts side by side, and the job may show
	// RUNNING before they end: wait for their files.
	jobFile, envFile := filepath.Join(dir, id), filepath.Join(envs, id)
	if !c.Poll(func() bool { return exists(jobFile) && exists(envFile) }) {
		t.Fatalf("the prologs' files %s, %s: not written\n%s", jobFile, envFile, c.Logs())
	}
	b, err := os.ReadFile(jobFile)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		got[k] = v
	}
	want := map[string]string{"SLURM_JOB_ID": id, "SLURM_CLUSTER_NAME": c.Name, "SLURM_JOB_ACCOUNT": "vision",
		"SLURM_JOB_PARTITION": c.Partition, "SLURM_JOB_USER": "root", "SLURM_JOB_GPUS": "0,1",
		"SLURM_JOB_COMMENT": "gpupool.io/output-metric=steps_total"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("job file %s=%q, want %q", k, got[k], v)
		}
	}
	if got["SLURM_JOB_START_TIME"] == "" {
		t.Errorf("job file has no SLURM_JOB_START_TIME: %s", b)
	}
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	// What the prolog reads its GPUs from (CUDA_VISIBLE_DEVICES where an older
	// Slurm sets no SLURM_JOB_GPUS).
	for _, v := range []string{"SLURM_JOB_GPUS=0,1", "CUDA_VISIBLE_DEVICES=0,1", "SLURM_SCRIPT_CONTEXT=prolog_slurmd"} {
		if !strings.Contains(string(env), "\n"+v+"\n") && !strings.HasPrefix(string(env), v+"\n") {
			t.Errorf("the prolog's environment lacks %s:\n%s", v, env)
		}
	}
	if strings.Contains(string(env), "GPUPOOL_SLURM_DIR") {
		t.Errorf("slurmd passed its GPUPOOL_SLURM_DIR to the prolog: the wrapper is no longer needed (update docs/slurm.md)")
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("GPUPOOL_SLURM_DIR"), id)); err == nil {
		t.Errorf("the prolog wrote into slurmd's GPUPOOL_SLURM_DIR")
	}

	c.Run("scancel", id)
	c.WaitState(id, "CANCELLED")
	// The epilog has run once the job has left COMPLETING.
	if _, err := os.Stat(filepath.Join(dir, id)); !os.IsNotExist(err) {
		t.Errorf("job file after the epilog: %v, want it removed\n%s", err, c.Logs())
	}
}

// TestLiveEmptyPrologGlob shows why docs/slurm.md names the prolog's file: with
// Prolog=<dir>/prolog.d/* and no file there, slurmd fails the prolog, drains
// the node and requeues the job, so nothing runs until an operator resumes the
// node.
func TestLiveEmptyPrologGlob(t *testing.T) {
	c := testslurm.Start(t, testslurm.Options{EmptyPrologDir: true})
	id := c.Submit("--wrap", "true")
	var job, node string
	if !c.Poll(func() bool {
		job = c.Run("scontrol", "--oneliner", "show", "job", id)
		node = c.Run("scontrol", "--oneliner", "show", "node", c.Node)
		return strings.Contains(job, "JobState=COMPLETED") || strings.Contains(job, "requeued_held")
	}) {
		t.Fatalf("neither ran nor was requeued:\n%s\n%s", job, node)
	}
	node = c.Run("scontrol", "--oneliner", "show", "node", c.Node)
	if !strings.Contains(node, "DRAIN") || !strings.Contains(node, "Prolog error") || !strings.Contains(job, "requeued_held") {
		t.Errorf("with an empty prolog glob, want the node drained for a prolog error and the job not run:\n%s\n%s", job, node)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
