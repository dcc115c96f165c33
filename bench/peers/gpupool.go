package main

import (
	"context"
	"time"

	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
)

type ourResult struct {
	values             int64
	rawBytes, allBytes int64
	// recentBytes is gpu_state_minute's: the last hours per GPU and minute (kept
	// three hours, so not in allBytes, which is what a day's data costs to keep).
	recentBytes int64
	load        time.Duration
	queries     queryTimes
}

// loadGpupool loads the trace into chDB with ingest's own table code (no bus: the
// bus's cost is BenchmarkIngestThroughput's), merges every table, and runs the
// same queries (queries.go), in database db.
func loadGpupool(dir, db, lib string, cfg sim.Config, tr *trace, job string, end int64) (*ourResult, error) {
	ctx := context.Background()
	scfg := chdb.DefaultConfig()
	scfg.Path, scfg.Database, scfg.LibPath = dir, db, lib
	s, err := chdb.Open(scfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if _, err := store.Migrate(ctx, s, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		return nil, err
	}
	t0 := time.Now()
	l := ingest.NewLoader(s, 500_000)
	for _, b := range tr.batches {
		if err := l.AddSamples(ctx, b); err != nil {
			return nil, err
		}
	}
	if err := l.Flush(ctx); err != nil {
		return nil, err
	}
	r := &ourResult{load: time.Since(t0)}
	for _, t := range []string{"gpu_samples", "process_samples", "gpu_minute", "gpu_hour", "process_minute", "gpu_state_minute"} {
		if err := s.Exec(ctx, "OPTIMIZE TABLE "+t+" FINAL", nil); err != nil {
			return nil, err
		}
		res, err := s.Query(ctx, "SELECT sum(bytes_on_disk) AS b FROM system.parts WHERE active AND database = currentDatabase() AND table = {t:String}", store.Params{"t": t})
		if err != nil {
			return nil, err
		}
		rows := store.Read(res, "bytes of "+t)
		rows.Next()
		n := rows.Int("b")
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if t == "gpu_state_minute" {
			r.recentBytes = n
			continue
		}
		r.allBytes += n
		if t == "gpu_samples" || t == "process_samples" {
			r.rawBytes += n
		}
	}
	// Metric values as BenchmarkBytesPerValue counts them: reported measurements.
	res, err := s.Query(ctx, `SELECT
		(SELECT count() * 6 + count(gr_engine_active) + count(sm_active) + count(sm_occupancy) + count(tensor_active)
			+ count(dram_active) + count(gpu_util) + count(pcie_tx_bytes_per_s) + count(pcie_rx_bytes_per_s)
			+ count(power_w) + count(temp_c) FROM gpu_samples)
		+ (SELECT count() + count(sm_util) + count(mem_util) FROM process_samples) AS v`, nil)
	if err != nil {
		return nil, err
	}
	rows := store.Read(res, "values stored")
	rows.Next()
	if r.values = rows.Int("v"); rows.Err() != nil {
		return nil, rows.Err()
	}
	if r.queries, err = ourQueries(s, cfg.Tick, job, end); err != nil {
		return nil, err
	}
	return r, nil
}
