package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCluster runs a GPU batch job on the cluster: scontrol show job -d names
// the GPU indices Slurm chose while it runs, and the job gets them in
// SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES.
func TestCluster(t *testing.T) {
	c := Start(t, Options{})
	id := c.Submit("--gres=gpu:a100:2", "--wrap", "echo GPUS=$SLURM_JOB_GPUS CVD=$CUDA_VISIBLE_DEVICES; sleep 60")
	c.WaitState(id, "RUNNING")
	if got := c.Run("scontrol", "--oneliner", "show", "job", "-d", id); !strings.Contains(got, "GRES=gpu:a100:2(IDX:0-1)") {
		t.Errorf("scontrol show job -d: no GRES=gpu:a100:2(IDX:0-1) in %s", got)
	}
	out := filepath.Join(c.Dir, "job-"+id+".out")
	c.waitFor("the job's output", func() bool { b, _ := os.ReadFile(out); return len(b) > 0 })
	b, _ := os.ReadFile(out)
	if got := strings.TrimSpace(string(b)); got != "GPUS=0,1 CVD=0,1" {
		t.Errorf("job output %q, want GPUS=0,1 CVD=0,1", got)
	}
	c.Run("scancel", id)
	if st := c.WaitState(id, "CANCELLED"); st != "CANCELLED" {
		t.Errorf("after scancel: %s", st)
	}
}
