package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// rssResult is one process's peak resident memory and how long it took.
type rssResult struct {
	peakKiB uint64
	took    time.Duration
}

// buildGpupool builds the gpupool command from the module at root into dir.
func buildGpupool(root, dir string) (string, error) {
	bin := filepath.Join(dir, "gpupool")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gpupool")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gpupool in %s: %w", root, err)
	}
	return bin, nil
}

// childEnv is this process's environment without what would change the
// configuration of a gpupool child: it runs with its defaults.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GOMEMLIMIT", "GOGC", "GPUPOOL_CONFIG", "GPUPOOL_NATS_URL", "GPUPOOL_CLICKHOUSE_ADDR", "GPUPOOL_DATA_DIR":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// ingestRSS publishes the trace to a NATS server in this process, then runs `gpupool
// ingest` (bin) with its default configuration, into its embedded engine or, with
// clickhouseAddr, a ClickHouse server, and returns its peak resident memory
// (VmHWM) once its backlog is empty, and the time from its start to then.
func ingestRSS(ctx context.Context, bin, dir string, tr *trace, clickhouseAddr string) (*rssResult, error) {
	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{DataDir: filepath.Join(dir, "nats"), Host: "127.0.0.1", Port: -1}, nil)
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	nc, err := srv.Connect("peers")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if err := publishTrace(ctx, js, tr); err != nil {
		return nil, err
	}
	args := []string{"--data-dir", filepath.Join(dir, "data"), "--nats-url", srv.ClientURL(), "--log-level", "warn"}
	if clickhouseAddr != "" {
		args = append(args, "--clickhouse-addr", clickhouseAddr)
	}
	cmd := exec.Command(bin, append(args, "ingest")...)
	cmd.Env, cmd.Stderr = childEnv(), os.Stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}()
	for {
		select {
		case err := <-exited:
			exited <- err
			return nil, fmt.Errorf("gpupool ingest exited before its backlog drained: %v (its stderr is above)", err)
		case <-time.After(50 * time.Millisecond):
		}
		if os.Getenv("GPUPOOL_PEERS_MEMLOG") != "" { // where the child's memory is, as it runs
			pid := cmd.Process.Pid
			fmt.Fprintf(os.Stderr, "ingest child %.1fs: rss anon %d MiB, file %d MiB, peak %d MiB\n", time.Since(t0).Seconds(),
				procStatus(pid, "RssAnon:")>>10, procStatus(pid, "RssFile:")>>10, procStatus(pid, "VmHWM:")>>10)
		}
		b, err := ingest.Backlog(ctx, js, ingest.DefaultConfig().Durable)
		if err == nil && b["samples"] == 0 {
			return &rssResult{peakKiB: procStatus(cmd.Process.Pid, "VmHWM:"), took: time.Since(t0)}, nil
		}
	}
}

// publishTrace publishes every batch of the trace as a collector would.
func publishTrace(ctx context.Context, js jetstream.JetStream, tr *trace) error {
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := bus.EnsureStreams(sctx, js, bus.DefaultStreamsConfig()); err != nil {
		return err
	}
	enc := schemas.NewEncoder()
	for _, b := range tr.batches {
		data, err := enc.Encode(nil, b)
		if err != nil {
			return err
		}
		if _, err := js.PublishMsgAsync(&nats.Msg{Subject: bus.SamplesSubject(b.Cluster, b.Node), Data: data}); err != nil {
			return err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
		return nil
	case <-sctx.Done():
		return errors.New("publish the trace: not acknowledged within a minute")
	}
}

// endpointIngestRSS is ingestRSS against a chDB process serving ClickHouse's
// native protocol (chdbtest.StartEndpoint): the ingest process holds no engine.
func endpointIngestRSS(ctx context.Context, bin, dir string, tr *trace) (*rssResult, error) {
	epDir := filepath.Join(dir, "endpoint")
	if err := os.MkdirAll(epDir, 0o700); err != nil {
		return nil, err
	}
	ep, err := chdbtest.StartEndpoint(ctx, epDir)
	if err != nil {
		return nil, err
	}
	defer ep.Stop()
	return ingestRSS(ctx, bin, dir, tr, ep.TCPAddr)
}

// promRSS loads the trace into Prometheus TSDB in a process of its own (this
// program, -prom-child) and returns its peak resident memory (the child's
// rusage) and its run time.
func promRSS(dir string, gpus, ticks int) (*rssResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-prom-child", dir, "-gpus", fmt.Sprint(gpus), "-ticks", fmt.Sprint(ticks))
	cmd.Env, cmd.Stderr = childEnv(), os.Stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("prometheus child: %w", err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return nil, errors.New("prometheus child: no rusage")
	}
	return &rssResult{peakKiB: uint64(ru.Maxrss), took: time.Since(t0)}, nil
}

// promChild is -prom-child: the simulated fleet's trace, made a tick at a time
// (as a scrape would bring it), appended into a TSDB at dir, committed per tick.
func promChild(dir string, gpus, ticks int) error {
	cfg, err := fleetConfig(gpus)
	if err != nil {
		return err
	}
	fleet, err := sim.New(cfg)
	if err != nil {
		return err
	}
	db, err := tsdb.Open(dir, nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		return err
	}
	l := &loader{refs: map[string]storage.SeriesRef{}}
	for k := range ticks {
		at := cfg.Start.Add(time.Duration(k) * cfg.Tick)
		fleet.Advance(at)
		l.app = db.Appender(context.Background())
		for _, n := range fleet.Nodes() {
			b := &schemas.SampleBatch{Cluster: n.Cluster(), Node: n.Name()}
			if err := n.Sample(context.Background(), at, b); err != nil {
				return err
			}
			if err := l.addBatch(b); err != nil {
				return err
			}
		}
		if err := l.app.Commit(); err != nil {
			return err
		}
	}
	return db.Close()
}

// procStatus reads one KiB figure of /proc/<pid>/status (0 if unreadable).
func procStatus(pid int, key string) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			var v uint64
			_, _ = fmt.Sscan(f[1], &v)
			return v
		}
	}
	return 0
}

// runRSS measures, runs times alternating, the peak resident memory of gpupool
// ingest (embedded engine, then a ClickHouse endpoint) and of Prometheus TSDB on
// the same trace, and prints them as a table.
func runRSS(root, bins string, gpus, ticks, runs int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "peers-rss")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var binaries []string
	if bins != "" {
		binaries = strings.Split(bins, ",")
	} else {
		bin, err := buildGpupool(root, dir)
		if err != nil {
			return err
		}
		binaries = []string{bin}
	}
	cfg, err := fleetConfig(gpus)
	if err != nil {
		return err
	}
	tr, err := simTrace(cfg, ticks)
	if err != nil {
		return err
	}
	prom := []*rssResult{}
	emb, ep := make([][]*rssResult, len(binaries)), make([][]*rssResult, len(binaries))
	for i := range runs {
		sub := func(name string) string { return filepath.Join(dir, fmt.Sprintf("%s-%d", name, i)) }
		p, err := promRSS(sub("tsdb"), gpus, ticks)
		if err != nil {
			return err
		}
		prom = append(prom, p)
		for k, bin := range binaries {
			e, err := ingestRSS(ctx, bin, sub(fmt.Sprint("embedded", k)), tr, "")
			if err != nil {
				return err
			}
			c, err := endpointIngestRSS(ctx, bin, sub(fmt.Sprint("endpoint", k)), tr)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "rss run %d of %d: Prometheus %.0f MiB in %v; %s: gpupool ingest embedded %.0f MiB in %v, to ClickHouse %.0f MiB in %v\n",
				i+1, runs, mib(p), p.took.Round(time.Millisecond), filepath.Base(bin), mib(e), e.took.Round(time.Millisecond), mib(c), c.took.Round(time.Millisecond))
			emb[k], ep[k] = append(emb[k], e), append(ep[k], c)
		}
	}
	fmt.Printf("trace: %d GPUs x %d ticks of %v: %d GPU rows, %d process rows; %d run(s) each, alternating\n",
		tr.gpus, ticks, cfg.Tick, tr.gpuRows, tr.procRows, runs)
	fmt.Println("| peak RSS, MiB (MB); each a process of its own | Prometheus TSDB (a process loading the trace) | gpupool ingest, default configuration, embedded engine | gpupool ingest, default configuration, to a ClickHouse server |")
	fmt.Println("| --- | --- | --- | --- |")
	for k, bin := range binaries {
		fmt.Printf("| %s | %s (%s) | %s (%s) | %s (%s) |\n", filepath.Base(bin),
			span(prom, mib, "%.0f"), span(prom, mb, "%.0f"), span(emb[k], mib, "%.0f"), span(emb[k], mb, "%.0f"), span(ep[k], mib, "%.0f"), span(ep[k], mb, "%.0f"))
		fmt.Printf("| %s: its start to the trace stored, s | %s | %s | %s |\n", filepath.Base(bin),
			span(prom, secs, "%.1f"), span(emb[k], secs, "%.1f"), span(ep[k], secs, "%.1f"))
	}
	return nil
}

func mib(r *rssResult) float64  { return float64(r.peakKiB) / 1024 }
func mb(r *rssResult) float64   { return float64(r.peakKiB) * 1024 / 1e6 }
func secs(r *rssResult) float64 { return r.took.Seconds() }
