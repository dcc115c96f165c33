package attribution

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/schemas"
)

// TestHostileEnvironmentSanitised: a Slurm task whose environment holds a
// 7 MB account, a partition with a newline, a team with spaces and a start
// time of 2⁶³−1 seconds is attributed to its job with values that pass the
// identifier rules, and counted as sanitised; its start time is dropped, not
// wrapped around.
func TestHostileEnvironmentSanitised(t *testing.T) {
	a, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join([]string{
		"SLURM_JOB_ID=4242", "SLURM_CLUSTER_NAME=hpc 1", "SLURM_JOB_ACCOUNT=" + strings.Repeat("a", 7<<20),
		"SLURM_JOB_PARTITION=gpu\nq", "SLURM_JOB_START_TIME=9223372036854775807", "GPUPOOL_TEAM=Team NLP!",
		"GPUPOOL_MODEL=llama\x01", "",
	}, "\x00")
	read := a.fs.readFile
	a.fs.readFile = func(name string) ([]byte, error) {
		if filepath.Base(name) == "environ" && filepath.Base(filepath.Dir(name)) == "1008" {
			return []byte(env), nil
		}
		return read(name)
	}
	got, err := a.Attribute(t.Context(), 1008)
	if err != nil {
		t.Fatal(err)
	}
	ev := schemas.JobEvent{Job: got.Job, Team: got.Team, Project: got.Project, Queue: got.Queue, Pool: got.Pool,
		ModelName: got.ModelName, Workload: got.Workload, Labels: got.Labels}
	if err := schemas.CheckJobEventIdents(&ev); err != nil {
		t.Errorf("attributed %+v: %v", ev, err)
	}
	if got.Team != "Team_NLP_" || got.Queue != "gpu_q" || len(got.Project) != schemas.MaxNameLen || got.ModelName != "llama_" {
		t.Errorf("team %q queue %q project of %d bytes model %q", got.Team, got.Queue, len(got.Project), got.ModelName)
	}
	if !strings.HasPrefix(got.Job, "slurm/") || got.StartMs < 0 {
		t.Errorf("job %q start %d", got.Job, got.StartMs)
	}
	if n := a.Stats().Sanitized; n != 1 {
		t.Errorf("Sanitized = %d, want 1", n)
	}
	clean, err := a.Attribute(t.Context(), 1001)
	if err != nil {
		t.Fatal(err)
	}
	if n := a.Stats().Sanitized; n != 1 {
		t.Errorf("after a clean process (%+v) Sanitized = %d, want still 1", clean, n)
	}
}

// TestSanitizeLabels: pod labels past the rules (too many, a control character,
// a long value) are made to pass them; the pod's own map is left alone.
func TestSanitizeLabels(t *testing.T) {
	labels := map[string]string{"gpupool.io/team": "nlp", "bad": "a\x00b", "long": strings.Repeat("v", 9000)}
	for i := range 100 {
		labels[strings.Repeat("k", i+1)] = "v"
	}
	before := len(labels)
	info := collector.JobInfo{Job: "k8s/ns/uid", Team: "nlp", Labels: labels}
	fixed := sanitize(&info)
	if err := schemas.CheckLabels("labels", info.Labels); err != nil || len(fixed) != 1 || fixed[0] != "labels" {
		t.Errorf("labels after sanitize: %v (fixed %v)", err, fixed)
	}
	if len(labels) != before || labels["bad"] != "a\x00b" {
		t.Error("sanitize changed the pod's own labels")
	}
	if v := info.Labels["bad"]; v != "" && !bytes.Equal([]byte(v), []byte("a_b")) {
		t.Errorf("bad label became %q", v)
	}
	if fixed := sanitize(&collector.JobInfo{Job: "k8s/ns/uid", Team: "nlp", Labels: map[string]string{"a": "b"}}); len(fixed) != 0 {
		t.Errorf("clean info sanitised: %v", fixed)
	}
}
