package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// fakeT records how Start gave up; Fatal and Skip end the goroutine, as the
// testing package's do.
type fakeT struct {
	testing.TB
	how, msg string
}

func (f *fakeT) Helper()                   {}
func (f *fakeT) Fatal(args ...any)         { f.how, f.msg = "fail", fmt.Sprint(args...); runtime.Goexit() }
func (f *fakeT) Skip(args ...any)          { f.how, f.msg = "skip", fmt.Sprint(args...); runtime.Goexit() }
func (f *fakeT) Fatalf(s string, a ...any) { f.Fatal(fmt.Sprintf(s, a...)) }

// TestStartWithoutSlurm: with no Slurm to be found, Start fails the test saying
// how to get it, and skips it only with GPUPOOL_TEST_NO_SLURM=1.
func TestStartWithoutSlurm(t *testing.T) {
	t.Setenv("PATH", "/nonexistent") // scontrol and sbatch live in /usr/bin
	for _, tc := range []struct{ optOut, want string }{{"", "fail"}, {"1", "skip"}} {
		t.Setenv(OptOut, tc.optOut)
		f := &fakeT{TB: t}
		done := make(chan struct{})
		go func() { defer close(done); Start(f, Options{}); f.how = "started" }()
		<-done
		if f.how != tc.want || !strings.Contains(f.msg, "make deps") || !strings.Contains(f.msg, OptOut+"=1") {
			t.Errorf("%s=%q: %s %q; want %s with how to get Slurm", OptOut, tc.optOut, f.how, f.msg, tc.want)
		}
	}
}
