package attribution

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSlurmJobFile checks a Slurm task whose environment is unreadable (PID 1009:
// cgroup job_5151, no environ) takes its owner from the prolog's job file, and
// that a file naming another job, or none, leaves it with the cgroup's job alone.
func TestSlurmJobFile(t *testing.T) {
	for _, tc := range []struct {
		name, content   string
		project, queue  string
		user, gpus, job string
	}{
		{"prolog file", "SLURM_JOB_ID=5151\nSLURM_CLUSTER_NAME=hpc\nSLURM_JOB_ACCOUNT=vision\nSLURM_JOB_PARTITION=a100\nSLURM_JOB_USER=alice\nSLURM_JOB_GPUS=0,1\nGPUPOOL_TEAM=forged\n",
			"vision", "a100", "alice", "0,1", "slurm/hpc/5151"},
		{"file of another job", "SLURM_JOB_ID=6000\nSLURM_JOB_ACCOUNT=other\n", "", "", "", "", "slurm/" + testCluster + "/5151"},
		{"no file", "", "", "", "", "", "slurm/" + testCluster + "/5151"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.content != "" {
				if err := os.WriteFile(filepath.Join(dir, "5151"), []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg := testConfig()
			cfg.SlurmJobDir = dir
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Attribute(t.Context(), 1009)
			if err != nil {
				t.Fatal(err)
			}
			if got.Job != tc.job || got.Project != tc.project || got.Queue != tc.queue || got.Team != "" {
				t.Errorf("job %q project %q queue %q team %q, want %q %q %q \"\"", got.Job, got.Project, got.Queue, got.Team, tc.job, tc.project, tc.queue)
			}
			if got.Labels["slurm.user"] != tc.user || got.Labels["slurm.gpus"] != tc.gpus {
				t.Errorf("labels %v, want slurm.user %q slurm.gpus %q", got.Labels, tc.user, tc.gpus)
			}
		})
	}
}

func FuzzSlurmJobFile(f *testing.F) {
	f.Add([]byte("SLURM_JOB_ID=42\nSLURM_JOB_ACCOUNT=a\n"))
	f.Add([]byte("SLURM_JOB_ID=42\x00\n=\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, "42"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		env, err := readSlurmJobFile(dir, "42")
		if err == nil && env.SlurmJobID != "42" {
			t.Fatalf("accepted a file for job %q", env.SlurmJobID)
		}
	})
}
