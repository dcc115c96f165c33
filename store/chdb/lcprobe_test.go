package chdb_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

func TestLCProbe(t *testing.T) {
	if os.Getenv("LCPROBE") == "" {
		t.Skip("probe")
	}
	ctx := t.Context()
	s := chdbtest.Open(t)
	store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650})
	err := s.Exec(ctx, `INSERT INTO process_samples SELECT now64(3) - intDiv(number, 32768), 'bench', concat('gpu-', toString(intDiv(number, 512) % 64)), concat('GPU-', toString(intDiv(number, 64) % 512)), 10000 + number % 64, 'tritonserver', concat('k8s/serving/pod-', toString(intDiv(number,64)%512)), 800 + number % 64, (number % 100) / 100, (number % 50) / 100 FROM numbers(2048000)`, nil)
	if err != nil { t.Fatal(err) }
	dir := t.TempDir()
	files := map[string]string{
		"lc-sorted":  "SELECT * FROM process_samples ORDER BY cluster, node, gpu_uuid, pid, ts",
		"lc-time":    "SELECT * FROM process_samples ORDER BY ts, node",
		"str-time":   "SELECT ts, CAST(cluster AS String) cluster, CAST(node AS String) node, CAST(gpu_uuid AS String) gpu_uuid, pid, CAST(process_name AS String) process_name, CAST(job AS String) job, fb_used_mib, sm_util, mem_util FROM process_samples ORDER BY ts, node",
		"str-sorted": "SELECT ts, CAST(cluster AS String) cluster, CAST(node AS String) node, CAST(gpu_uuid AS String) gpu_uuid, pid, CAST(process_name AS String) process_name, CAST(job AS String) job, fb_used_mib, sm_util, mem_util FROM process_samples ORDER BY cluster, node, gpu_uuid, pid, ts",
	}
	for name, q := range files {
		if err := s.Exec(ctx, "INSERT INTO FUNCTION file({f:String}, 'Native') "+q, store.Params{"f": filepath.Join(dir, name)}); err != nil { t.Fatal(err) }
	}
	s.Exec(ctx, "CREATE TABLE d AS process_samples", nil)
	for round := 0; round < 2; round++ {
		for _, name := range []string{"lc-sorted", "lc-time", "str-time", "str-sorted"} {
			f := filepath.Join(dir, name)
			data, _ := os.ReadFile(f)
			// 10 inserts of ~200k rows, as ingest does
			t0 := time.Now()
			if err := chdb.InsertRaw(s, ctx, "d", data); err != nil { t.Fatal(err) }
			t.Logf("%-10s stream insert 2M: %.0f rows/s (%d MB)", name, 2048000/time.Since(t0).Seconds(), len(data)>>20)
		}
		t0 := time.Now()
		s.Exec(ctx, "INSERT INTO d SELECT * FROM file({f:String}, 'Native')", store.Params{"f": filepath.Join(dir, "str-time")})
		t.Logf("str-time file insert: %.0f rows/s", 2048000/time.Since(t0).Seconds())
	}
}
