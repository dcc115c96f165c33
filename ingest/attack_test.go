package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/collector/daemon"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/ingest"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// credential is a bus connection with one of the documented role credentials.
type credential struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func connectAs(t *testing.T, b *bustest.Bus, seed, name string) credential {
	t.Helper()
	nc, err := bus.Connect(bus.ClientConfig{URL: b.URL, NKeyFile: seed}, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return credential{nc: nc, js: js}
}

// publishJobEvents publishes events as one batch on subject and returns its
// stream sequence.
func publishJobEvents(t *testing.T, c credential, subject string, events ...schemas.JobEvent) uint64 {
	t.Helper()
	data, err := schemas.EncodeJobEvents(nil, &schemas.JobEventBatch{Producer: "attack", Seq: 1, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := c.js.Publish(t.Context(), subject, data)
	if err != nil {
		t.Fatalf("publish on %s: %v", subject, err)
	}
	return ack.Sequence
}

// publishSamples publishes a sample batch of one GPU naming cluster and node on
// subject and returns its stream sequence.
func publishSamples(t *testing.T, c credential, subject, cluster, node string, at time.Time) uint64 {
	t.Helper()
	g := schemas.NewGPUSample()
	g.TimeMs, g.GPUUUID, g.Card, g.FBTotalMiB = at.UnixMilli(), "GPU-forged", "H100-80GB", 81559
	data, err := schemas.NewEncoder().Encode(nil, &schemas.SampleBatch{Cluster: cluster, Node: node, GPUs: []schemas.GPUSample{g}})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := c.js.Publish(t.Context(), subject, data)
	if err != nil {
		t.Fatalf("publish on %s: %v", subject, err)
	}
	return ack.Sequence
}

// deadLettersByReason reads gpupool_ingest_dead_letters_total from reg.
func deadLettersByReason(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "gpupool_ingest_dead_letters_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var kind, reason string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "kind":
					kind = l.GetValue()
				case "reason":
					reason = l.GetValue()
				}
			}
			out[kind+"/"+reason] += m.GetCounter().GetValue()
		}
	}
	return out
}

// TestAttackNodeRestriction: a node's real collector credential (collector role,
// cluster c1, node gpu-01) on the embedded NATS server with the documented
// per-role users publishes, on the subjects it may publish on, a sample batch
// naming another node, one naming another cluster, a job event relabelling
// another team's job, job events ending another cluster's job, and a job event
// claiming the scheduler's source. Ingest, with its own credential and a cache
// that starts empty (so the jobs' owners come from the store), dead-letters each
// with its reason, counts it, tells the node of its rejected batches, and stores
// none of it; the node's own traffic, another cluster's and the scheduler's are
// stored before and after.
func TestAttackNodeRestriction(t *testing.T) {
	users := map[string]struct {
		roles         []bus.Role
		cluster, node string
	}{
		"gpu-01":    {[]bus.Role{bus.RoleCollector, bus.RoleAgent}, "c1", "gpu-01"},
		"gpu-09":    {[]bus.Role{bus.RoleCollector, bus.RoleAgent}, "c2", "gpu-09"},
		"ingest":    {[]bus.Role{bus.RoleIngest, bus.RoleStreams}, "", ""},
		"scheduler": {[]bus.Role{bus.RoleScheduler}, "", ""},
	}
	var list []bus.User
	seeds := map[string]string{}
	for name, u := range users {
		user, seed := bustest.NewUser(t, name, u.roles, u.cluster, u.node)
		list, seeds[name] = append(list, user), seed
	}
	b := bustest.StartUsers(t, list...)
	st := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), st, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	node, other, sched, ing := connectAs(t, b, seeds["gpu-01"], "gpu-01"), connectAs(t, b, seeds["gpu-09"], "gpu-09"),
		connectAs(t, b, seeds["scheduler"], "scheduler"), connectAs(t, b, seeds["ingest"], "ingest")
	cfg := testConfig()
	run := func(opts ...ingest.Option) (func() error, *ingest.Ingester) {
		in, err := ingest.New(cfg, ing.js, st, opts...)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { done <- in.Run(ctx) }()
		stopped := false
		stop := func() error {
			if stopped {
				return nil
			}
			stopped = true
			cancel()
			return <-done
		}
		t.Cleanup(func() { _ = stop() })
		return stop, in
	}

	ccfg := collector.DefaultConfig()
	ccfg.Cluster, ccfg.Node = "c1", "gpu-01"
	col, err := collector.New(ccfg, fakeSource{gpus: 2, procs: 1}, node.js)
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	rej, err := collector.WatchRejections(node.nc, bus.RejectedSubject("c1", "gpu-01"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rej.Stop()
	now := time.Now().Truncate(time.Millisecond)
	ms := now.UnixMilli()
	own := schemas.JobEvent{TimeMs: ms, Job: "k8s/vision/train", Event: schemas.EventStart, Cluster: "c1", Team: "vision",
		Project: "detect", Queue: "prod", Source: schemas.SourceKubernetes, Nodes: []string{"gpu-01"}, Attempt: 1}
	theirs := schemas.JobEvent{TimeMs: ms, Job: "slurm/c2/42", Event: schemas.EventStart, Cluster: "c2", Team: "nlp",
		Source: schemas.SourceSlurm, Nodes: []string{"gpu-09"}, Attempt: 1}

	// Before: each credential's legitimate traffic, stored by a first ingest.
	stop1, _ := run()
	if err := col.Collect(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	publishJobEvents(t, node, bus.JobsSubject("c1"), own)
	publishJobEvents(t, other, bus.JobsSubject("c2"), theirs)
	schedPub, err := bus.NewJobPublisher(bus.JetStreamSender{JS: sched.js}, bus.ProducerName("scheduler"), bus.AsScheduler())
	if err != nil {
		t.Fatal(err)
	}
	schedJob := schemas.JobEvent{TimeMs: ms, Job: "sched/nlp/1", Event: schemas.EventSubmit, Team: "nlp", Queue: "batch",
		Source: schemas.SourceScheduler, GPUs: 1, Attempt: 1}
	if err := schedPub.Publish(t.Context(), []schemas.JobEvent{schedJob}); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, b.JS, cfg.Durable)
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	if got := count(t, st, "SELECT count() AS n FROM job_events"); got != 3 {
		t.Fatalf("before the attack: %d job events stored, want 3", got)
	}

	// The attack, on the node's own subjects.
	reg := prometheus.NewRegistry()
	stop2, in := run(ingest.WithMetrics(ingest.NewMetrics(reg)))
	end := func(job, cluster string) schemas.JobEvent {
		return schemas.JobEvent{TimeMs: ms + 1000, Job: job, Event: schemas.EventEnd, Cluster: cluster,
			Source: schemas.SourceSlurm, Status: schemas.StatusCancelled, ExitCode: 137, Attempt: 1}
	}
	relabel := schemas.JobEvent{TimeMs: ms + 1000, Job: "k8s/vision/train", Event: schemas.EventStart, Cluster: "c1",
		Team: "nlp", Source: schemas.SourceKubernetes, Attempt: 1}
	claim := schemas.JobEvent{TimeMs: ms + 1000, Job: "sched/nlp/1", Event: schemas.EventEnd, Cluster: "c1",
		Source: schemas.SourceScheduler, Status: schemas.StatusCancelled, Attempt: 1}
	samples, jobs := bus.SamplesSubject("c1", "gpu-01"), bus.JobsSubject("c1")
	attacks := []struct {
		name, kind, reason string
		publish            func() uint64
	}{
		{"(a) samples naming another node", "samples", "subject_mismatch",
			func() uint64 { return publishSamples(t, node, samples, "c1", "gpu-02", now) }},
		{"(b) samples naming another cluster", "samples", "subject_mismatch",
			func() uint64 { return publishSamples(t, node, samples, "c2", "gpu-01", now) }},
		{"(c) relabelling another team's job", "jobs", "identity_changed",
			func() uint64 { return publishJobEvents(t, node, jobs, relabel) }},
		{"(d) ending another cluster's job, naming that cluster", "jobs", "subject_mismatch",
			func() uint64 { return publishJobEvents(t, node, jobs, end("slurm/c2/42", "c2")) }},
		{"(d) ending another cluster's job, naming its own", "jobs", "identity_changed",
			func() uint64 { return publishJobEvents(t, node, jobs, end("slurm/c2/42", "c1")) }},
		{"(e) claiming the scheduler's source", "jobs", "source_not_allowed",
			func() uint64 { return publishJobEvents(t, node, jobs, claim) }},
		{"(e) a legitimate event beside a forged one, in one batch", "jobs", "source_not_allowed",
			func() uint64 { return publishJobEvents(t, node, jobs, end("k8s/vision/train", "c1"), claim) }},
	}
	want := map[string]string{} // kind/seq → reason
	wantCount := map[string]float64{}
	for _, a := range attacks {
		seq := a.publish()
		want[a.kind+"/"+strconv.FormatUint(seq, 10)] = a.reason
		wantCount[a.kind+"/"+a.reason]++
	}
	// The scheduler's own subject is closed to the node's credential.
	if err := node.nc.Publish(bus.SchedulerJobsSubject("c1"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := node.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a permissions violation for the scheduler's subject", 10*time.Second, func() error {
		if err := node.nc.LastError(); !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), bus.SchedulerJobsSubject("c1")) {
			return fmt.Errorf("last error %v", err)
		}
		return nil
	})

	// After: legitimate traffic still flows.
	if err := col.Collect(t.Context(), now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	publishJobEvents(t, node, jobs, end("k8s/vision/train", "c1"))
	publishJobEvents(t, other, bus.JobsSubject("c2"), end("slurm/c2/42", "c2"))
	schedEnd := schemas.JobEvent{TimeMs: ms + 2000, Job: "sched/nlp/1", Event: schemas.EventEnd, Source: schemas.SourceScheduler,
		Status: schemas.StatusSucceeded, Attempt: 1}
	if err := schedPub.Publish(t.Context(), []schemas.JobEvent{schedEnd}); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, b.JS, cfg.Durable)
	if err := stop2(); err != nil {
		t.Fatal(err)
	}

	dl, err := b.JS.Stream(t.Context(), bus.StreamDeadLetter)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dl.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(len(attacks)) {
		t.Errorf("%d dead letters, want %d", info.State.Msgs, len(attacks))
	}
	got := map[string]string{}
	for seq := uint64(1); seq <= info.State.Msgs; seq++ {
		m, err := dl.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		kind := m.Subject[len(bus.DeadLetterPrefix)+1:]
		got[kind+"/"+m.Header.Get(ingest.HeaderStreamSeq)] = m.Header.Get(ingest.HeaderReason)
		t.Logf("dead letter: %s %s: %s", m.Header.Get(ingest.HeaderSubject), m.Header.Get(ingest.HeaderReason), m.Header.Get(ingest.HeaderError))
	}
	for k, reason := range want {
		if got[k] != reason {
			t.Errorf("message %s: dead-lettered as %q, want %q", k, got[k], reason)
		}
	}
	counted := deadLettersByReason(t, reg)
	for k, n := range wantCount {
		if counted[k] != n {
			t.Errorf("gpupool_ingest_dead_letters_total{%s} = %g, want %g", k, counted[k], n)
		}
	}
	if s := in.Stats().DeadLetters; s != uint64(len(attacks)) {
		t.Errorf("Stats().DeadLetters = %d, want %d", s, len(attacks))
	}

	waitUntil(t, "the node to hear of its two rejected batches", 10*time.Second, func() error {
		if got := rej.Stats().Batches; got != 2 {
			return fmt.Errorf("heard of %d", got)
		}
		return nil
	})

	// Nothing of the attack is stored; everything legitimate is.
	for q, n := range map[string]uint64{
		"SELECT count() AS n FROM gpu_samples WHERE node != 'gpu-01' OR cluster != 'c1'":                     0,
		"SELECT count() AS n FROM gpu_samples WHERE gpu_uuid = 'GPU-forged'":                                 0,
		"SELECT count() AS n FROM gpu_samples":                                                               4,
		"SELECT count() AS n FROM job_events WHERE team = 'nlp' AND job = 'k8s/vision/train'":                0,
		"SELECT count() AS n FROM job_events WHERE job = 'slurm/c2/42' AND cluster != 'c2'":                  0,
		"SELECT count() AS n FROM job_events WHERE job = 'slurm/c2/42' AND event = 'end'":                    1,
		"SELECT count() AS n FROM job_events WHERE source = 'scheduler' AND event = 'end' AND cluster != ''": 0,
		"SELECT count() AS n FROM job_events WHERE job = 'k8s/vision/train' AND event = 'end'":               1,
		"SELECT count() AS n FROM job_events":                                                                6,
		"SELECT count() AS n FROM jobs WHERE job = 'k8s/vision/train' AND team = 'vision'":                   1,
		"SELECT count() AS n FROM jobs WHERE job = 'sched/nlp/1' AND status = 'succeeded'":                   1,
	} {
		if got := count(t, st, q); got != n {
			t.Errorf("%s: %d, want %d", q, got, n)
		}
	}
}

// TestNodeRestrictionKeepsFleetCredential: a simulated fleet of two clusters
// published, as `gpupool collector --source sim` does, with one collector
// credential scoped to every cluster and node ("*"), is stored whole: node
// restriction holds each message to its own subject, which the simulation always
// agrees with.
func TestNodeRestrictionKeepsFleetCredential(t *testing.T) {
	loadgen, loadgenSeed := bustest.NewUser(t, "loadgen", []bus.Role{bus.RoleCollector}, bus.AnyName, bus.AnyName)
	ingestUser, ingestSeed := bustest.NewUser(t, "ingest", []bus.Role{bus.RoleIngest, bus.RoleStreams}, "", "")
	b := bustest.StartUsers(t, loadgen, ingestUser)
	st := chdbtest.Open(t)
	if _, err := store.Migrate(t.Context(), st, schemas.MigrationParams{RawTTLDays: 3650}); err != nil {
		t.Fatal(err)
	}
	pub := connectAs(t, b, loadgenSeed, "loadgen")
	fleet := sim.DefaultConfig()
	fleet.Clusters, fleet.NodesPerCluster, fleet.GPUsPerNode = 2, 2, 2
	cfg := daemon.DefaultConfig()
	cfg.Source, cfg.Cluster, cfg.Node = daemon.SourceSim, "c1", "n1"
	cfg.Resolve(t.TempDir())
	icfg := testConfig()
	d, err := daemon.New(cfg, fleet, &bus.Conn{NC: pub.nc, JS: pub.js}, daemon.WithSimulation(2*time.Hour, 0, icfg.MaxFutureSkew))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	published := b.Stored(t)
	in, err := ingest.New(icfg, connectAs(t, b, ingestSeed, "ingest").js, st)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	waitCaughtUp(t, b.JS, icfg.Durable)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := in.Stats().DeadLetters; n != 0 {
		t.Fatalf("%d messages dead-lettered", n)
	}
	if published.JobEvents == 0 || published.SampleBatches == 0 {
		t.Fatalf("the simulation published %+v", published)
	}
	t.Logf("published and stored: %+v", published)
	assertExact(t, st, published.GPURows, published.ProcessRows, published.JobEvents)
}
