package frag

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadTraceTestdata(t *testing.T) {
	tr, err := LoadTrace("testdata", "pods.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Nodes) != 12 || len(tr.Tasks) != 40 {
		t.Fatalf("got %d nodes, %d tasks; want 12 and 40", len(tr.Nodes), len(tr.Tasks))
	}
	want := NodeSpec{Name: "openb-node-0022", CPUMilli: 128000, MemoryMiB: 786432, GPUs: 8, Model: "G3"}
	if tr.Nodes[1] != want {
		t.Errorf("node 1 = %+v, want %+v", tr.Nodes[1], want)
	}
	p := tr.Tasks[1]
	if p.Name != "openb-pod-0001" || p.GPUs != 1 || p.GPUMilli != 460 || p.CPUMilli != 6000 || p.MemoryMiB != 12288 || p.Created != 427061 || p.QoS != "LS" {
		t.Errorf("task 1 = %+v", p)
	}
	if _, err := LoadTrace("testdata", "pods_gpushare40.csv"); err != nil {
		t.Errorf("gpushare40 copy: %v", err)
	}
}

func TestDecodeErrorsNameFileLineColumn(t *testing.T) {
	const head = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
	cases := []struct {
		name, in, want string
	}{
		{"not a number", head + "a,1,2,1,500,\nb,x,2,1,500,\n", `pods.csv:3: column cpu_milli: "x": not an integer`},
		{"fraction over one", head + "a,1,2,1,1500,\n", `pods.csv:2: column gpu_milli: "1500": out of range [0, 1000]`},
		{"multi-GPU fraction", head + "a,1,2,2,500,\n", `pods.csv:2: column gpu_milli: "500": a multi-GPU task must ask whole GPUs`},
		{"gpu_milli without gpus", head + "a,1,2,0,500,\n", `pods.csv:2: column gpu_milli: "500": a task with num_gpu 0`},
		{"one GPU asking nothing", head + "a,1,2,1,0,\n", `pods.csv:2: column gpu_milli: "0": a one-GPU task must ask`},
		{"empty model in spec", head + "a,1,2,1,500,T4|\n", `pods.csv:2: column gpu_spec: "T4|": empty GPU model`},
		{"negative", head + "a,1,-2,1,500,\n", `pods.csv:2: column memory_mib: "-2": out of range`},
		{"missing column", "name,cpu_milli\n", `pods.csv:1: header lacks column "memory_mib"`},
		{"short record", head + "a,1,2\n", `pods.csv:2: reading a record`},
		{"empty", "", `pods.csv:1: empty file`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeTasks("pods.csv", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadValue) {
				t.Fatalf("err = %v, want one containing %q that wraps ErrBadValue", err, tc.want)
			}
		})
	}
}

func TestDecodeNodesErrors(t *testing.T) {
	const head = "sn,cpu_milli,memory_mib,gpu,model\n"
	cases := []struct{ name, in, want string }{
		{"duplicate", head + "n1,1,1,2,T4\nn1,1,1,2,T4\n", `nodes.csv:3: column sn: "n1": node listed twice (first on line 2)`},
		{"no model", head + "n1,1,1,2,\n", `nodes.csv:2: column model: "": a node with GPUs needs its GPU model`},
		{"too many GPUs", head + "n1,1,1,65,T4\n", `nodes.csv:2: column gpu: "65": out of range [0, 64]`},
		{"no name", head + ",1,1,2,T4\n", `nodes.csv:2: column sn: "": empty node name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeNodes("nodes.csv", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadTraceMissingDirSaysWhere(t *testing.T) {
	_, err := LoadTrace(filepath.Join(t.TempDir(), "none"), "pods.csv")
	if err == nil || !strings.Contains(err.Error(), "nodes.csv") || !strings.Contains(err.Error(), "-trace") {
		t.Fatalf("err = %v, want the missing file and the -trace hint", err)
	}
}

// TestRealTraceCounts reads the real trace when the repository sits beside
// ../shared (as in CI); the trace's README gives these counts.
func TestRealTraceCounts(t *testing.T) {
	dir := realTraceDir(t)
	for _, f := range []string{"pods.csv", "pods_gpushare40.csv"} {
		tr, err := LoadTrace(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		if got := NewCluster(tr.Nodes).TotalGPUs(); len(tr.Nodes) != 1213 || got != 6212 || len(tr.Tasks) != 8152 {
			t.Errorf("%s: %d nodes, %d GPUs, %d tasks; want 1213, 6212, 8152", f, len(tr.Nodes), got, len(tr.Tasks))
		}
	}
}

// realTraceDir is ../shared/data/alibaba-gpu-2023 beside the repository root;
// the test skips, saying so, when it is not there.
func realTraceDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "..", "..", "shared", "data", "alibaba-gpu-2023")
	if _, err := os.Stat(filepath.Join(dir, "nodes.csv")); err != nil {
		tb.Skipf("no real trace beside the repository (%v); the unit tests use testdata", err)
	}
	return dir
}

func FuzzDecodeTasks(f *testing.F) {
	for _, name := range []string{"testdata/pods.csv", "testdata/pods_gpushare40.csv", "testdata/nodes.csv"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\na,1,2,1,500,T4|A10\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		tasks, err := DecodeTasks("fuzz.csv", strings.NewReader(string(in)))
		if err != nil {
			if !errors.Is(err, ErrBadValue) {
				t.Fatalf("error %v does not wrap ErrBadValue", err)
			}
			return
		}
		for _, tk := range tasks {
			s := ShapeOf(tk)
			if s.GPUs < 0 || s.GPUMilli < 0 || s.GPUMilli > MilliGPU || (s.GPUs > 1 && s.GPUMilli != MilliGPU) || (s.GPUs == 0) != (s.GPUMilli == 0) {
				t.Fatalf("decoded an impossible task %+v", tk)
			}
		}
		nodes, err := DecodeNodes("fuzz.csv", strings.NewReader(string(in)))
		if err == nil {
			c := NewCluster(nodes)
			if c.FreeMilli() != c.TotalGPUs()*MilliGPU {
				t.Fatalf("an empty cluster of %d GPUs has %d milli free", c.TotalGPUs(), c.FreeMilli())
			}
		}
	})
}
