package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// TestDemoAndSQL runs the demo command end to end on a small fleet as fast as
// possible, then queries what it left behind through the sql command.
func TestDemoAndSQL(t *testing.T) {
	g := &Globals{DataDir: t.TempDir(), CHDBLib: chdbtest.LibPath(), LogLevel: "warn"}
	var out bytes.Buffer
	d := &DemoCmd{Duration: 3 * time.Hour, Speed: 0, Clusters: 1, Nodes: 4, GPUs: 4, out: &out}
	if err := d.Run(g, t.Context()); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"GPU-hours by team and card type", "Utilisation by card type", "sm_active_p50",
		"Samples: published by collectors vs stored", "Samples lost: 0", "gpupool sql",
		"Findings by kind", "wasted_gpu_hours", "Cost by team", "Analyzer: ", "USD",
		"Failures by reason", "Cost by cluster", "energy_cost", "queue_wait_cost", "Output by model", "per_gpu_hour",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	// The analyzer ran on simulated time and found the fleet's idle and zombie
	// jobs; the findings are in the store.
	if !regexp.MustCompile(`(?m)^(idle|zombie) +[1-9]`).MatchString(text) {
		t.Errorf("the summary shows no idle or zombie findings:\n%s", text)
	}
	if !strings.Contains(text, " 0 failed)") {
		t.Errorf("analyzer passes failed:\n%s", text)
	}
	var fOut bytes.Buffer
	if err := (&SQLCmd{Query: "SELECT countIf(kind IN ('idle', 'zombie')) > 0 AS found FROM findings", Format: "csv", out: &fOut}).Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	if fOut.String() != "found\n1\n" {
		t.Errorf("findings table: %q", fOut.String())
	}

	var sqlOut bytes.Buffer
	q := &SQLCmd{Query: "SELECT count() > 0 AS has_rows, countIf(job = '') AS unattributed FROM process_samples", Format: "csv", out: &sqlOut}
	if err := q.Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sqlOut.String(), "has_rows,unattributed\n1,") {
		t.Errorf("sql output %q", sqlOut.String())
	}
	w := &SQLCmd{Query: "DROP TABLE gpu_samples", Format: "table", out: &sqlOut}
	if err := w.Run(g, t.Context()); err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("sql let a DROP through: %v", err)
	}
	w.Write = true
	if err := w.Run(g, t.Context()); err == nil || !strings.Contains(err.Error(), "allow_write") {
		t.Errorf("--write without sql.allow_write: %v", err)
	}
	pq := filepath.Join(t.TempDir(), "jobs.parquet")
	if err := (&SQLCmd{Query: "SELECT job, team, start_time, gpu_uuids FROM jobs", Format: "parquet", Output: pq}).Run(g, t.Context()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(pq); err != nil || fi.Size() < 100 {
		t.Errorf("parquet export: %v", err)
	}
}

func TestSQLWithoutData(t *testing.T) {
	g := &Globals{DataDir: t.TempDir() + "/none", CHDBLib: chdbtest.LibPath()}
	err := (&SQLCmd{Query: "SELECT 1", Format: "table"}).Run(g, t.Context())
	if err == nil || !strings.Contains(err.Error(), "gpupool demo") {
		t.Fatalf("sql on a missing database: %v", err)
	}
}

func TestBadConfigFile(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/bad.yaml"
	if err := writeFile(p, "ingest:\n  batch_rows: -1\n"); err != nil {
		t.Fatal(err)
	}
	g := &Globals{Config: p, DataDir: dir}
	err := (&MigrateCmd{Print: true}).Run(g, t.Context())
	if err == nil || !strings.Contains(err.Error(), "ingest.batch_rows") || !strings.Contains(err.Error(), p) {
		t.Fatalf("bad config: %v", err)
	}
}

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }

// TestDemoWithoutLibrary runs in a child process (the parent may have loaded the
// library already): the demo must fail with a clear error, not panic.
func TestDemoWithoutLibrary(t *testing.T) {
	if os.Getenv("GPUPOOL_TEST_CHILD") == "nolib" {
		g := &Globals{DataDir: t.TempDir(), CHDBLib: t.TempDir() + "/libchdb.so", LogLevel: "error"}
		err := (&DemoCmd{Duration: time.Hour, Speed: 0, out: &bytes.Buffer{}}).Run(g, t.Context())
		if err == nil || !strings.Contains(err.Error(), "make deps") {
			t.Fatalf("demo without libchdb.so: %v", err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDemoWithoutLibrary$", "-test.v")
	cmd.Env = append(os.Environ(), "GPUPOOL_TEST_CHILD=nolib")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "panic") || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
