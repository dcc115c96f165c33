package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb"
)

// storageTables are the tables a day of samples lands in: the raw samples and the
// rollups their materialized views feed.
var storageTables = []string{"gpu_samples", "process_samples", "gpu_minute", "gpu_hour", "process_minute"}

// metricValuesSQL counts the metric values the raw tables hold: every reported
// (non-NULL) measurement of a GPU row (15 fields, 5 of them never NULL) or a process
// row (3 fields, 1 never NULL); the
// identifying columns (time, names, index, PID) are not values. This is the count
// a Prometheus exporter would turn into samples.
const metricValuesSQL = `SELECT
	(SELECT count() * 5 + count(gr_engine_active) + count(sm_active) + count(sm_occupancy) + count(tensor_active)
		+ count(dram_active) + count(gpu_util) + count(pcie_tx_bytes_per_s) + count(pcie_rx_bytes_per_s)
		+ count(power_w) + count(temp_c) FROM gpu_samples) AS gpu_values,
	(SELECT count() + count(sm_util) + count(mem_util) FROM process_samples) AS process_values`

// noisify makes a simulated batch look like a real DCGM trace: the simulator's
// activity is smooth (a job's ratios follow its profile with a little jitter), a
// real GPU's readings move every sample. Ratios get ±3 % of jitter at full float
// precision, power ±2 %, PCIe ±10 %, memory use a few MiB, temperature is a whole
// degree (as DCGM reports it), and the energy counter follows the noisy power.
type noisify struct {
	rng    *rand.Rand
	energy map[string]float64
	lastMs map[string]int64
}

func newNoisify(seed uint64) *noisify {
	return &noisify{rng: rand.New(rand.NewPCG(seed, 7)), energy: map[string]float64{}, lastMs: map[string]int64{}}
}

func (n *noisify) ratio(v float32, sigma float64) float32 {
	if schemas.IsMissing(v) || v == 0 {
		return v
	}
	return float32(min(max(float64(v)+n.rng.NormFloat64()*sigma, 0), 1))
}

func (n *noisify) scale(v float32, rel float64) float32 {
	if schemas.IsMissing(v) {
		return v
	}
	return float32(max(float64(v)*(1+n.rng.NormFloat64()*rel), 0))
}

func (n *noisify) batch(b *schemas.SampleBatch) {
	for i := range b.GPUs {
		g := &b.GPUs[i]
		g.GrEngineActive = n.ratio(g.GrEngineActive, 0.03)
		g.SMActive = n.ratio(g.SMActive, 0.03)
		g.SMOccupancy = n.ratio(g.SMOccupancy, 0.03)
		g.TensorActive = n.ratio(g.TensorActive, 0.03)
		g.DRAMActive = n.ratio(g.DRAMActive, 0.03)
		g.GPUUtil = n.ratio(g.GPUUtil, 0.03)
		g.PowerW = n.scale(g.PowerW, 0.02)
		g.PCIeTxBytesPerS = n.scale(g.PCIeTxBytesPerS, 0.10)
		g.PCIeRxBytesPerS = n.scale(g.PCIeRxBytesPerS, 0.10)
		if !schemas.IsMissing(g.TempC) {
			g.TempC = float32(math.Round(float64(g.TempC) + n.rng.NormFloat64()*0.5))
		}
		if g.FBUsedMiB > 8 {
			g.FBUsedMiB = uint32(int64(g.FBUsedMiB) + n.rng.Int64N(9) - 4)
		}
		if last, ok := n.lastMs[g.GPUUUID]; ok && !schemas.IsMissing(g.PowerW) {
			n.energy[g.GPUUUID] += float64(g.PowerW) * float64(g.TimeMs-last)
		} else if !ok {
			n.energy[g.GPUUUID] = float64(g.EnergyMilliJ)
		}
		n.lastMs[g.GPUUUID] = g.TimeMs
		g.EnergyMilliJ = uint64(n.energy[g.GPUUUID])
	}
	for i := range b.Processes {
		p := &b.Processes[i]
		p.SMUtil = n.ratio(p.SMUtil, 0.03)
		p.MemUtil = n.ratio(p.MemUtil, 0.03)
		if p.FBUsedMiB > 8 {
			p.FBUsedMiB = uint32(int64(p.FBUsedMiB) + n.rng.Int64N(5) - 2)
		}
	}
}

// simDay encodes a simulated day of the default fleet, one message per node per
// tick; noisy passes every batch through noisify.
func simDay(b *testing.B, noisy bool) (msgs [][]byte, subjects []string) {
	cfg := sim.DefaultConfig()
	cfg.Start = time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	fleet, err := sim.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	nz := newNoisify(1)
	enc := schemas.NewEncoder()
	for t := cfg.Start; t.Before(cfg.Start.Add(24 * time.Hour)); t = t.Add(cfg.Tick) {
		fleet.Advance(t)
		for _, n := range fleet.Nodes() {
			batch := &schemas.SampleBatch{Cluster: n.Cluster(), Node: n.Name()}
			if err := n.Sample(b.Context(), t, batch); err != nil {
				b.Fatal(err)
			}
			if noisy {
				nz.batch(batch)
			}
			data, err := enc.Encode(nil, batch)
			if err != nil {
				b.Fatal(err)
			}
			msgs = append(msgs, data)
			subjects = append(subjects, bus.SamplesSubject(n.Cluster(), n.Name()))
		}
	}
	return msgs, subjects
}

// ingestAll publishes msgs and runs ingest until JetStream is drained.
func ingestAll(b *testing.B, s *chdb.Store, msgs [][]byte, subjects []string) {
	ctx := b.Context()
	bt := bustest.Start(b)
	for i := range msgs {
		if _, err := bt.JS.PublishMsgAsync(&nats.Msg{Subject: subjects[i], Data: msgs[i]}); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 { // stay below the client's limit of outstanding publishes
			<-bt.JS.PublishAsyncComplete()
		}
	}
	<-bt.JS.PublishAsyncComplete()
	ing, err := ingest.New(benchIngestConfig(), bt.JS, s)
	if err != nil {
		b.Fatal(err)
	}
	ictx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ing.Run(ictx) }()
	if err := drain(ctx, bt.JS, benchIngestConfig().Durable); err != nil {
		b.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// tableBytes is one table's size after OPTIMIZE … FINAL.
type tableBytes struct {
	table       string
	rows, bytes float64
	columns     []columnBytes
}

type columnBytes struct {
	name, typ, codec string
	bytes            float64
}

// storageSizes merges every table into one part per partition and reads the
// bytes on disk per table and per column.
func storageSizes(b *testing.B, s store.Store) ([]tableBytes, float64) {
	ctx := b.Context()
	var out []tableBytes
	for _, table := range storageTables {
		if err := s.Exec(ctx, "OPTIMIZE TABLE "+table+" FINAL", nil); err != nil {
			b.Fatal(err)
		}
		res, err := s.Query(ctx, `SELECT sum(rows) AS rows, sum(bytes_on_disk) AS bytes
			FROM system.parts WHERE active AND database = currentDatabase() AND table = {t:String}`, store.Params{"t": table})
		if err != nil {
			b.Fatal(err)
		}
		tb := tableBytes{table: table}
		tb.rows, _ = res.Float(0, "rows")
		tb.bytes, _ = res.Float(0, "bytes")
		cols, err := s.Query(ctx, `SELECT name, type, compression_codec AS codec, data_compressed_bytes AS bytes
			FROM system.columns WHERE database = currentDatabase() AND table = {t:String} ORDER BY bytes DESC`, store.Params{"t": table})
		if err != nil {
			b.Fatal(err)
		}
		for i := range len(cols.Rows) {
			var c columnBytes
			c.name, _ = cols.String(i, "name")
			c.typ, _ = cols.String(i, "type")
			c.codec, _ = cols.String(i, "codec")
			c.bytes, _ = cols.Float(i, "bytes")
			tb.columns = append(tb.columns, c)
		}
		out = append(out, tb)
	}
	res, err := s.Query(ctx, metricValuesSQL, nil)
	if err != nil {
		b.Fatal(err)
	}
	gv, _ := res.Float(0, "gpu_values")
	pv, _ := res.Float(0, "process_values")
	return out, gv + pv
}

// reportStorage reports bytes per metric value per table and in all, with and
// without the rollups, and logs the per-column breakdown (GPUPOOL_BENCH_COLUMNS=1).
func reportStorage(b *testing.B, trace string, sizes []tableBytes, values float64) {
	var raw, all float64
	for _, t := range sizes {
		all += t.bytes
		if strings.HasSuffix(t.table, "_samples") {
			raw += t.bytes
		}
		b.ReportMetric(t.bytes/values, t.table+"_B/value")
		b.Logf("%s %s: %.0f rows, %.0f bytes, %.3f bytes per metric value, %.2f bytes per row", trace, t.table, t.rows, t.bytes, t.bytes/values, t.bytes/t.rows)
		if os.Getenv("GPUPOOL_BENCH_COLUMNS") != "" {
			for _, c := range t.columns {
				fmt.Fprintf(os.Stderr, "%s %s    %-26s %-40s %-28s %10.0f B  %.3f B/row\n", trace, t.table, c.name, c.typ, c.codec, c.bytes, c.bytes/t.rows)
			}
		}
	}
	b.ReportMetric(raw/values, "raw_B/value")
	b.ReportMetric(all/values, "all_B/value")
	b.Logf("%s: %.0f metric values; %.3f bytes per value in the raw tables, %.3f with the rollups", trace, values, raw/values, all/values)
}

// BenchmarkBytesPerValue runs a simulated day of the default fleet (and the same
// day with realistic measurement noise) through NATS → ingest → chDB, merges every
// part, and reports bytes on disk per metric value, per table and in all.
func BenchmarkBytesPerValue(b *testing.B) {
	for _, trace := range []string{"sim", "noisy"} {
		b.Run(trace, func(b *testing.B) {
			msgs, subjects := simDay(b, trace == "noisy")
			for b.Loop() {
				s := openStore(b)
				ingestAll(b, s, msgs, subjects)
				sizes, values := storageSizes(b, s)
				reportStorage(b, trace, sizes, values)
			}
		})
	}
}
