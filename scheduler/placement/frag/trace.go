package frag

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// MilliGPU is one whole GPU in the trace's gpu_milli unit.
const MilliGPU = 1000

// maxNodeGPUs bounds a node's GPU count and a task's num_gpu: larger values are
// read as a broken file rather than a machine.
const maxNodeGPUs = 64

// NodeSpec is one row of nodes.csv: a GPU node and its capacity.
type NodeSpec struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
	Model     string
}

// Task is one row of pods.csv: what the task asks for. GPUs is 0 (CPU only), 1
// with GPUMilli ≤ 1000 (a fraction of one GPU, or one whole GPU), or k > 1 with
// GPUMilli 1000 (k whole GPUs on one node). Models lists the GPU models the task
// may run on; empty means any. Times are seconds from the trace's start, -1
// when the field is empty or absent (a Pending task has no scheduled_time).
type Task struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
	GPUMilli  int
	Models    []string
	QoS       string
	Phase     string
	Created   int64
	Scheduled int64
	Deleted   int64
}

// Trace is the node list and the task list of one trace directory.
type Trace struct {
	Nodes []NodeSpec
	Tasks []Task
}

// LoadTrace reads dir/nodes.csv and dir/<tasks> (pods.csv or
// pods_gpushare40.csv).
func LoadTrace(dir, tasks string) (Trace, error) {
	var tr Trace
	var err error
	if tr.Nodes, err = readFile(filepath.Join(dir, "nodes.csv"), DecodeNodes); err != nil {
		return Trace{}, err
	}
	if tr.Tasks, err = readFile(filepath.Join(dir, tasks), DecodeTasks); err != nil {
		return Trace{}, err
	}
	return tr, nil
}

func readFile[T any](path string, decode func(string, io.Reader) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("frag: read trace: %w (the Alibaba GPU trace of 2023 lives in ../shared/data/alibaba-gpu-2023; pass its directory with -trace)", err)
	}
	defer f.Close()
	return decode(path, f)
}

// DecodeNodes reads nodes.csv (columns sn, cpu_milli, memory_mib, gpu, model, in
// any order; others are ignored). name is the file name used in errors.
func DecodeNodes(name string, r io.Reader) ([]NodeSpec, error) {
	var out []NodeSpec
	seen := map[string]int{}
	err := decodeCSV(name, r, []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}, func(row *row) error {
		n := NodeSpec{Name: row.str("sn"), Model: row.str("model")}
		n.CPUMilli = row.int("cpu_milli", 0, 1<<40)
		n.MemoryMiB = row.int("memory_mib", 0, 1<<40)
		n.GPUs = int(row.int("gpu", 0, maxNodeGPUs))
		if row.err == nil && n.Name == "" {
			row.fail("sn", "empty node name")
		}
		if row.err == nil && n.GPUs > 0 && n.Model == "" {
			row.fail("model", "a node with GPUs needs its GPU model")
		}
		if prev, dup := seen[n.Name]; row.err == nil && dup {
			row.fail("sn", fmt.Sprintf("node listed twice (first on line %d)", prev))
		}
		if row.err == nil {
			seen[n.Name] = row.line
			out = append(out, n)
		}
		return row.err
	})
	return out, err
}

// DecodeTasks reads pods.csv (columns name, cpu_milli, memory_mib, num_gpu,
// gpu_milli, gpu_spec; qos, pod_phase, creation_time, scheduled_time and
// deletion_time when present). name is the file name used in errors.
func DecodeTasks(name string, r io.Reader) ([]Task, error) {
	var out []Task
	err := decodeCSV(name, r, []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"}, func(row *row) error {
		t := Task{Name: row.str("name"), QoS: row.str("qos"), Phase: row.str("pod_phase")}
		t.CPUMilli = row.int("cpu_milli", 0, 1<<40)
		t.MemoryMiB = row.int("memory_mib", 0, 1<<40)
		t.GPUs = int(row.int("num_gpu", 0, maxNodeGPUs))
		t.GPUMilli = int(row.int("gpu_milli", 0, MilliGPU))
		t.Created = row.optInt("creation_time")
		t.Scheduled = row.optInt("scheduled_time")
		t.Deleted = row.optInt("deletion_time")
		if spec := row.str("gpu_spec"); spec != "" {
			t.Models = strings.Split(spec, "|")
			if slices.Contains(t.Models, "") {
				row.fail("gpu_spec", "empty GPU model in the |-separated list")
			}
		}
		checkTaskGPU(row, t)
		if row.err == nil {
			out = append(out, t)
		}
		return row.err
	})
	return out, err
}

func checkTaskGPU(row *row, t Task) {
	switch {
	case row.err != nil:
	case t.GPUs == 0 && t.GPUMilli != 0:
		row.fail("gpu_milli", "a task with num_gpu 0 must ask gpu_milli 0")
	case t.GPUs == 1 && t.GPUMilli == 0:
		row.fail("gpu_milli", "a one-GPU task must ask gpu_milli 1–1000")
	case t.GPUs > 1 && t.GPUMilli != MilliGPU:
		row.fail("gpu_milli", "a multi-GPU task must ask whole GPUs (gpu_milli 1000)")
	}
}

// row is one CSV record being decoded; the first error sticks.
type row struct {
	file string
	line int
	cols map[string]int
	rec  []string
	err  error
}

func (r *row) fail(col, reason string) {
	if r.err != nil {
		return
	}
	v := ""
	if i, ok := r.cols[col]; ok && i < len(r.rec) {
		v = r.rec[i]
	}
	r.err = &ParseError{File: r.file, Line: r.line, Column: col, Value: v, Reason: reason}
}

func (r *row) str(col string) string {
	i, ok := r.cols[col]
	if !ok {
		return ""
	}
	return strings.TrimSpace(r.rec[i])
}

func (r *row) int(col string, lo, hi int64) int64 {
	s := r.str(col)
	v, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		r.fail(col, "not an integer")
	case v < lo || v > hi:
		r.fail(col, fmt.Sprintf("out of range [%d, %d]", lo, hi))
	}
	return v
}

// optInt is an optional non-negative integer; -1 when empty or absent.
func (r *row) optInt(col string) int64 {
	if _, ok := r.cols[col]; !ok || r.str(col) == "" {
		return -1
	}
	return r.int(col, 0, 1<<50)
}

func decodeCSV(file string, rd io.Reader, required []string, each func(*row) error) error {
	cr := csv.NewReader(rd)
	cr.ReuseRecord = false
	header, err := cr.Read()
	if err != nil {
		return csvErr(file, 1, err, "reading the header")
	}
	cols := map[string]int{}
	for i, h := range header {
		cols[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, c := range required {
		if _, ok := cols[c]; !ok {
			return &ParseError{File: file, Line: 1, Reason: fmt.Sprintf("header lacks column %q (has %s)", c, strings.Join(header, ","))}
		}
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return csvErr(file, 0, err, "reading a record")
		}
		line, _ := cr.FieldPos(0)
		if err := each(&row{file: file, line: line, cols: cols, rec: rec}); err != nil {
			return err
		}
	}
}

func csvErr(file string, line int, err error, doing string) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		line = pe.Line
	}
	if errors.Is(err, io.EOF) {
		return &ParseError{File: file, Line: line, Reason: "empty file (want a CSV header)"}
	}
	return &ParseError{File: file, Line: line, Reason: fmt.Sprintf("%s: %v", doing, err)}
}
