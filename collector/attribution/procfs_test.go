package attribution

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseStartTicks(t *testing.T) {
	rest := " S 1 7 7 0 -1 4194560 120 0 54 0 86 99 0 0 20 0 34 0 %s 48213590016 2201934\n"
	tests := []struct {
		name    string
		in      string
		want    uint64
		wantErr bool
	}{
		{"plain", "7 (python3)" + withStart(rest, "5512345"), 5512345, false},
		{"spaces and parens in comm", "7 (my app) S 1 (x)" + withStart(rest, "42"), 42, false},
		{"comm that looks like fields", "7 (a) S 1 2 3)" + withStart(rest, "99"), 99, false},
		{"no parenthesis", "7 python3 S 1", 0, true},
		{"too few fields", "7 (python3) S 1 7 7", 0, true},
		{"not a number", "7 (python3)" + withStart(rest, "12x"), 0, true},
		{"overflow", "7 (python3)" + withStart(rest, "99999999999999999999"), 0, true},
		{"empty", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStartTicks([]byte(tt.in))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// withStart puts v where rest has %s.
func withStart(rest, v string) string { return strings.Replace(rest, "%s", v, 1) }

func TestReadStartTicks(t *testing.T) {
	got, err := readStartTicks("testdata/proc/1001/stat")
	if err != nil || got != 5512345 {
		t.Fatalf("got %d, %v; want 5512345", got, err)
	}
	if _, err := readStartTicks("testdata/proc/99999/stat"); !errors.Is(procErr(99999, "stat", err), ErrNoProcess) {
		t.Fatalf("missing stat: %v, want ErrNoProcess", err)
	}
}

func TestBootTime(t *testing.T) {
	got, err := newProcFS("testdata/proc").bootTimeSeconds()
	if err != nil || got != 1767225600 {
		t.Fatalf("got %d, %v; want 1767225600", got, err)
	}
	if _, err := newProcFS(t.TempDir()).bootTimeSeconds(); err == nil {
		t.Fatal("no error without a stat file")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "stat"), "cpu 1 2 3\nbtime x\n")
	if _, err := newProcFS(dir).bootTimeSeconds(); err == nil {
		t.Fatal("no error for a bad btime")
	}
}

func TestProcessFacts(t *testing.T) {
	fs := newProcFS("testdata/proc")
	if uid, ok := fs.processUID(1013); !ok || uid != 1002 {
		t.Errorf("uid %d, %v; want 1002", uid, ok)
	}
	if got := fs.exeName(1013); got != "python3.12" {
		t.Errorf("exe %q, want python3.12 (from the exe link)", got)
	}
	if got := fs.exeName(1014); got != "tritonserver" {
		t.Errorf("exe %q, want tritonserver (from comm)", got)
	}
	if got, want := fs.cmdline(1013), "/opt/venv/bin/python3 -m vllm serve meta-llama/Llama-3.1-8B --port 8000"; got != want {
		t.Errorf("cmdline %q, want %q", got, want)
	}
	if _, ok := fs.processUID(99999); ok {
		t.Error("uid of a missing process")
	}
}

func TestParseEnviron(t *testing.T) {
	in := "PATH=/bin\x00SLURM_JOB_ID=42\x00SLURM_JOB_ID=43\x00NOEQUALS\x00GPUPOOL_TEAM= nlp \x00" +
		"GPUPOOL_JOB=run=1\x00SLURM_CLUSTER_NAME=hpc\x00GPUPOOL_MODEL=llama" // no trailing NUL
	got := parseEnviron([]byte(in))
	want := envInfo{SlurmJobID: "42", SlurmCluster: "hpc", Team: "nlp", Job: "run=1", Model: "llama"}
	if got != want {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
	if got := parseEnviron(nil); got != (envInfo{}) {
		t.Errorf("empty environ: %+v", got)
	}
}
