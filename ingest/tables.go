package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/wirepb"
	"github.com/gpupool/gpupool/store"
)

// tableBlock is rows bound for one table.
type tableBlock struct {
	table string
	block *store.Block
	// rollup: the rows are computed from the batch's other rows (not counted as
	// rows ingested).
	rollup bool
}

// rowSink decodes the messages of one stream and gathers their rows into blocks.
type rowSink interface {
	// add decodes and validates one message, delivered on subject, and appends its
	// rows, all or none. It returns the number of rows added; an error means the
	// message is dead-lettered, unless it wraps errTransient or errHandBack (then
	// it is redelivered) or is a *repeatError (its rows were all stored before:
	// it is acknowledged).
	add(ctx context.Context, subject string, data []byte, now time.Time) (int, error)
	// blocks returns the gathered rows per table.
	blocks() []tableBlock
	// reset drops the gathered rows (not their content keys: see dedupper).
	reset()
	// dedupper returns the sink's content keys (dedup.go).
	dedupper() *dedup
}

// sinkOptions are what the row sinks check besides a message's own validity.
type sinkOptions struct {
	maxSkew time.Duration
	// horizon refuses samples older than now − horizon (0: none), see
	// Config.MaxSampleAge.
	horizon time.Duration
	// recent is the content keys of committed batches (nil: within the batch only).
	recent *recentKeys
	// rowLevel drops every repeat row by row, a message's new rows gathered and
	// its repeats left out (the Loader: no intents, no recovery); otherwise a
	// message repeating stored rows is judged whole (dedup.go).
	rowLevel bool
	// onDup counts rows dropped as repeats, by table (nil: not counted).
	onDup func(table string, n int)
	// energy is the last energy counter of each GPU, to check steps across
	// messages (nil: within a message only).
	energy *energyMemory
}

func (o sinkOptions) dup(table string, n int) {
	if o.onDup != nil && n > 0 {
		o.onDup(table, n)
	}
}

// sampleSink gathers SampleBatch messages into gpu_samples and process_samples.
type sampleSink struct {
	opts  sinkOptions
	dedup *dedup
	dec   *schemas.Decoder
	// restrict: a batch must name its subject's cluster and node (node
	// restriction; off for the Loader, which reads no bus).
	restrict bool

	gpu      *store.Block
	gTS      *store.DateTime64MsCol
	gCluster *store.LowCardinalityStringCol
	gNode    *store.LowCardinalityStringCol
	gUUID    *store.LowCardinalityStringCol
	gIndex   *store.UInt16Col
	gModel   *store.LowCardinalityStringCol
	gDriver  *store.LowCardinalityStringCol
	gCard    *store.LowCardinalityStringCol
	gMIG     *store.LowCardinalityStringCol
	gFBTotal *store.UInt32Col
	gFBUsed  *store.UInt32Col
	gGr      *store.NullableFloat32Col
	gSM      *store.NullableFloat32Col
	gOcc     *store.NullableFloat32Col
	gTensor  *store.NullableFloat32Col
	gDRAM    *store.NullableFloat32Col
	gUtil    *store.NullableFloat32Col
	gPCIeTx  *store.NullableFloat32Col
	gPCIeRx  *store.NullableFloat32Col
	gPower   *store.NullableFloat32Col
	gEnergy  *store.UInt64Col
	gTemp    *store.NullableFloat32Col
	gXID     *store.UInt32Col
	gClocks  *store.UInt64Col

	proc     *store.Block
	pTS      *store.DateTime64MsCol
	pCluster *store.LowCardinalityStringCol
	pNode    *store.LowCardinalityStringCol
	pUUID    *store.LowCardinalityStringCol
	pPID     *store.UInt32Col
	pName    *store.LowCardinalityStringCol
	pJob     *store.LowCardinalityStringCol
	pFBUsed  *store.UInt32Col
	pSM      *store.NullableFloat32Col
	pMem     *store.NullableFloat32Col

	minute    *processMinute
	gpuMinute *gpuRollup
	gpuHour   *gpuRollup
	// stateMinute is gpu_state_minute's rows (migration 0027: the fleet's state
	// now, per GPU and minute, for the last hours).
	stateMinute *stateMinute
}

func newSampleSink(opts sinkOptions, restrict bool) *sampleSink {
	s := &sampleSink{
		opts:     opts,
		dedup:    newDedup(opts.recent),
		restrict: restrict,
		dec:      schemas.NewDecoder(),
		gTS:      store.NewDateTime64Ms("ts"),
		gCluster: store.NewLowCardinalityString("cluster"),
		gNode:    store.NewLowCardinalityString("node"),
		gUUID:    store.NewLowCardinalityString("gpu_uuid"),
		gIndex:   store.NewUInt16("gpu_index"),
		gModel:   store.NewLowCardinalityString("model"),
		gDriver:  store.NewLowCardinalityString("driver_version"),
		gCard:    store.NewLowCardinalityString("card"),
		gMIG:     store.NewLowCardinalityString("mig_profile"),
		gFBTotal: store.NewUInt32("fb_total_mib"),
		gFBUsed:  store.NewUInt32("fb_used_mib"),
		gGr:      store.NewNullableFloat32("gr_engine_active"),
		gSM:      store.NewNullableFloat32("sm_active"),
		gOcc:     store.NewNullableFloat32("sm_occupancy"),
		gTensor:  store.NewNullableFloat32("tensor_active"),
		gDRAM:    store.NewNullableFloat32("dram_active"),
		gUtil:    store.NewNullableFloat32("gpu_util"),
		gPCIeTx:  store.NewNullableFloat32("pcie_tx_bytes_per_s"),
		gPCIeRx:  store.NewNullableFloat32("pcie_rx_bytes_per_s"),
		gPower:   store.NewNullableFloat32("power_w"),
		gEnergy:  store.NewUInt64("energy_mj"),
		gTemp:    store.NewNullableFloat32("temp_c"),
		gXID:     store.NewUInt32("xid"),
		gClocks:  store.NewUInt64("clock_event_reasons"),
		pTS:      store.NewDateTime64Ms("ts"),
		pCluster: store.NewLowCardinalityString("cluster"),
		pNode:    store.NewLowCardinalityString("node"),
		pUUID:    store.NewLowCardinalityString("gpu_uuid"),
		pPID:     store.NewUInt32("pid"),
		pName:    store.NewLowCardinalityString("process_name"),
		pJob:     store.NewLowCardinalityString("job"),
		pFBUsed:  store.NewUInt32("fb_used_mib"),
		pSM:      store.NewNullableFloat32("sm_util"),
		pMem:     store.NewNullableFloat32("mem_util"),
		minute:   newProcessMinute(),
	}
	s.gpuMinute = newGPURollup("gpu_minute", "minute", 60)
	s.gpuHour = newGPURollup("gpu_hour", "hour", 3600)
	s.stateMinute = newStateMinute()
	s.gpu = store.NewBlock(s.gTS, s.gCluster, s.gNode, s.gUUID, s.gIndex, s.gModel, s.gCard, s.gMIG,
		s.gFBTotal, s.gFBUsed, s.gGr, s.gSM, s.gOcc, s.gTensor, s.gDRAM, s.gUtil, s.gPCIeTx, s.gPCIeRx,
		s.gPower, s.gEnergy, s.gTemp, s.gXID, s.gClocks, s.gDriver)
	s.proc = store.NewBlock(s.pTS, s.pCluster, s.pNode, s.pUUID, s.pPID, s.pName, s.pJob, s.pFBUsed, s.pSM, s.pMem)
	return s
}

// add reads the message's columns straight into the blocks: numbers are copied a
// column at a time, and each dictionary string is looked up once per message.
func (s *sampleSink) add(_ context.Context, subject string, data []byte, now time.Time) (int, error) {
	pb, err := s.dec.DecodeColumns(data)
	if err != nil {
		return 0, err
	}
	if err := schemas.ValidateColumns(pb, now.UnixMilli(), s.opts.maxSkew.Milliseconds()); err != nil {
		return 0, err
	}
	if s.opts.horizon > 0 {
		if err := schemas.CheckNotBefore(pb, now.Add(-s.opts.horizon).UnixMilli(), "ingest.max_sample_age"); err != nil {
			return 0, err
		}
	}
	if s.restrict {
		if err := checkSamplesSubject(subject, pb.Cluster, pb.Node); err != nil {
			return 0, err
		}
	}
	if err := s.opts.energy.check(pb); err != nil {
		return 0, err
	}
	if err := s.dropRepeats(pb); err != nil {
		return 0, err
	}
	s.opts.energy.remember(pb)
	rows := 0
	if g := pb.Gpus; g != nil && len(g.TsDeltaMs) > 0 {
		n := len(g.TsDeltaMs)
		rows += n
		s.gTS.AppendDeltas(g.TsDeltaMs)
		s.gCluster.AppendN(pb.Cluster, n)
		s.gNode.AppendN(pb.Node, n)
		s.gUUID.AppendRefs(g.GpuUuid, pb.Dict, n)
		for _, v := range g.GpuIndex {
			s.gIndex.Append(uint16(v))
		}
		if len(g.GpuIndex) == 0 {
			s.gIndex.AppendN(0, n)
		}
		s.gModel.AppendRefs(g.Model, pb.Dict, n)
		s.gCard.AppendRefs(g.Card, pb.Dict, n)
		s.gMIG.AppendRefs(g.MigProfile, pb.Dict, n)
		s.gFBTotal.AppendOr(g.FbTotalMib, 0, n)
		s.gFBUsed.AppendOr(g.FbUsedMib, 0, n)
		appendRatios(s.gGr, g.GrEngineActive, n)
		appendRatios(s.gSM, g.SmActive, n)
		appendRatios(s.gOcc, g.SmOccupancy, n)
		appendRatios(s.gTensor, g.TensorActive, n)
		appendRatios(s.gDRAM, g.DramActive, n)
		appendRatios(s.gUtil, g.GpuUtil, n)
		appendRates(s.gPCIeTx, g.PcieTxBytesPerS, n)
		appendRates(s.gPCIeRx, g.PcieRxBytesPerS, n)
		appendSteps(s.gPower, g.PowerW, n, schemas.PowerStepW)
		s.gEnergy.AppendOr(g.EnergyMillij, 0, n)
		appendSteps(s.gTemp, g.TempC, n, schemas.TempStepC)
		s.gXID.AppendOr(g.Xid, 0, n)
		s.gClocks.AppendOr(g.ClockEventReasons, 0, n)
		s.gDriver.AppendRefs(g.DriverVersion, pb.Dict, n)
	}
	if p := pb.Processes; p != nil && len(p.TsDeltaMs) > 0 {
		n := len(p.TsDeltaMs)
		rows += n
		s.pTS.AppendDeltas(p.TsDeltaMs)
		s.pCluster.AppendN(pb.Cluster, n)
		s.pNode.AppendN(pb.Node, n)
		s.pUUID.AppendRefs(p.GpuUuid, pb.Dict, n)
		s.pPID.AppendOr(p.Pid, 0, n)
		s.pName.AppendRefs(p.ProcessName, pb.Dict, n)
		s.pJob.AppendRefs(p.Job, pb.Dict, n)
		s.pFBUsed.AppendOr(p.FbUsedMib, 0, n)
		appendRatios(s.pSM, p.SmUtil, n)
		appendRatios(s.pMem, p.MemUtil, n)
	}
	return rows, nil
}

// dropRepeats judges pb's rows by content key (dedup.go) and drops the repeats
// from its columns.
func (s *sampleSink) dropRepeats(pb *wirepb.SampleBatch) error {
	var g, p judged
	g.table, p.table = "gpu_samples", "process_samples"
	if c := pb.Gpus; c != nil && len(c.TsDeltaMs) > 0 {
		g.keys = s.dedup.sampleKeys(pb, c.GpuUuid, c.TsDeltaMs, nil, false)
	}
	if c := pb.Processes; c != nil && len(c.TsDeltaMs) > 0 {
		p.keys = s.dedup.sampleKeys(pb, c.GpuUuid, c.TsDeltaMs, c.Pid, true)
	}
	if err := s.dedup.judge([]*judged{&g, &p}, s.opts.rowLevel); err != nil {
		var rep *repeatError
		if errors.As(err, &rep) {
			for table, n := range rep.rows {
				s.opts.dup(table, n)
			}
		}
		return err
	}
	if g.drop > 0 {
		compactGPU(pb.Gpus, g.keep)
		s.opts.dup(g.table, g.drop)
	}
	if p.drop > 0 {
		compactProc(pb.Processes, p.keep)
		s.opts.dup(p.table, p.drop)
	}
	return nil
}

// appendRatios, appendRates and appendSteps append a message's column rounded to
// its stored precision (see schemas.RatioStep): the noise below it is what makes
// full-precision floats cost 2 to 4 bytes each on disk.
func appendRatios(c *store.NullableFloat32Col, vs []float32, n int) {
	k := len(c.Data)
	c.AppendOr(vs, n)
	schemas.QuantizeRatios(c.Data[k:])
}

func appendRates(c *store.NullableFloat32Col, vs []float32, n int) {
	k := len(c.Data)
	c.AppendOr(vs, n)
	schemas.QuantizeRates(c.Data[k:])
}

func appendSteps(c *store.NullableFloat32Col, vs []float32, n int, step float64) {
	k := len(c.Data)
	c.AppendOr(vs, n)
	schemas.QuantizeSteps(c.Data[k:], step)
}

// blocks returns the batch's samples and their rollups (migrations 0020 and 0021:
// ingest writes them, not materialized views), gpu_state_minute's among them
// (migration 0027: the last hours per GPU and minute; rows a Loader brings from
// further back are dropped there by its TTL, and a spool replayed after an outage
// shows on the fleet page at once).
func (s *sampleSink) blocks() []tableBlock {
	return []tableBlock{
		{table: "gpu_samples", block: s.gpu},
		{table: "process_samples", block: s.proc},
		{table: "process_minute", block: s.minute.build(s), rollup: true},
		{table: s.gpuMinute.table, block: s.gpuMinute.build(s), rollup: true},
		{table: s.gpuHour.table, block: s.gpuHour.build(s), rollup: true},
		{table: "gpu_state_minute", block: s.stateMinute.build(s), rollup: true},
	}
}

func (s *sampleSink) dedupper() *dedup { return s.dedup }

func (s *sampleSink) reset() {
	s.gpu.Reset()
	s.proc.Reset()
}

// jobSink gathers JobEventBatch messages into job_events.
type jobSink struct {
	opts  sinkOptions
	dedup *dedup
	// ids: node restriction, with the identities of the jobs seen (nil: none, for
	// the Loader, which reads no bus).
	ids     *identities
	blk     *store.Block
	ts      *store.DateTime64MsCol
	job     *store.StringCol
	event   *store.LowCardinalityStringCol
	source  *store.LowCardinalityStringCol
	cluster *store.LowCardinalityStringCol
	team    *store.LowCardinalityStringCol
	project *store.LowCardinalityStringCol
	queue   *store.LowCardinalityStringCol
	pool    *store.LowCardinalityStringCol
	model   *store.LowCardinalityStringCol
	work    *store.LowCardinalityStringCol
	gpus    *store.UInt32Col
	card    *store.LowCardinalityStringCol
	mig     *store.LowCardinalityStringCol
	migN    *store.UInt32Col
	frac    *store.UInt32Col
	sharing *store.LowCardinalityStringCol
	nodes   *store.StringArrayCol
	uuids   *store.StringArrayCol
	status  *store.LowCardinalityStringCol
	exit    *store.Int32Col
	attempt *store.UInt32Col
	rerun   *store.StringCol
	labels  *store.StringMapCol
}

func newJobSink(opts sinkOptions, ids *identities) *jobSink {
	s := &jobSink{
		opts:    opts,
		dedup:   newDedup(opts.recent),
		ids:     ids,
		ts:      store.NewDateTime64Ms("ts"),
		job:     store.NewString("job"),
		event:   store.NewLowCardinalityString("event"),
		source:  store.NewLowCardinalityString("source"),
		cluster: store.NewLowCardinalityString("cluster"),
		team:    store.NewLowCardinalityString("team"),
		project: store.NewLowCardinalityString("project"),
		queue:   store.NewLowCardinalityString("queue"),
		pool:    store.NewLowCardinalityString("pool"),
		model:   store.NewLowCardinalityString("model_name"),
		work:    store.NewLowCardinalityString("workload"),
		gpus:    store.NewUInt32("gpus"),
		card:    store.NewLowCardinalityString("card"),
		mig:     store.NewLowCardinalityString("mig_profile"),
		migN:    store.NewUInt32("mig_instances"),
		frac:    store.NewUInt32("gpu_fraction"),
		sharing: store.NewLowCardinalityString("sharing"),
		nodes:   store.NewStringArray("nodes"),
		uuids:   store.NewStringArray("gpu_uuids"),
		status:  store.NewLowCardinalityString("status"),
		exit:    store.NewInt32("exit_code"),
		attempt: store.NewUInt32("attempt"),
		rerun:   store.NewString("rerun_of"),
		labels:  store.NewStringMap("labels"),
	}
	s.blk = store.NewBlock(s.ts, s.job, s.event, s.source, s.cluster, s.team, s.project, s.queue, s.pool,
		s.model, s.work, s.gpus, s.card, s.nodes, s.uuids, s.status, s.exit, s.attempt, s.rerun, s.labels, s.mig, s.migN, s.frac, s.sharing)
	return s
}

func (s *jobSink) add(ctx context.Context, subject string, data []byte, now time.Time) (int, error) {
	b, err := schemas.DecodeJobEvents(data)
	if err != nil {
		return 0, err
	}
	limit := now.Add(s.opts.maxSkew).UnixMilli()
	for i := range b.Events {
		if b.Events[i].TimeMs > limit {
			return 0, errInvalid("event %d of job %q: time is more than %s ahead of now", i, b.Events[i].Job, s.opts.maxSkew)
		}
	}
	if s.ids != nil {
		scheduler, err := checkJobsSubject(subject, b.Events)
		if err != nil {
			return 0, err
		}
		if err := s.ids.check(ctx, b.Events, scheduler); err != nil {
			return 0, err
		}
	}
	j := judged{table: "job_events", keys: make([]rowKey, len(b.Events))}
	for i := range b.Events {
		j.keys[i] = s.dedup.jobEvent(&b.Events[i])
	}
	if err := s.dedup.judge([]*judged{&j}, s.opts.rowLevel); err != nil {
		var rep *repeatError
		if errors.As(err, &rep) {
			s.opts.dup(j.table, rep.rows[j.table])
		}
		return 0, err
	}
	s.opts.dup(j.table, j.drop)
	added := 0
	for i := range b.Events {
		e := &b.Events[i]
		if j.keep != nil && !j.keep[i] {
			continue
		}
		added++
		s.ts.Append(e.TimeMs)
		s.job.Append(e.Job)
		s.event.Append(e.Event)
		s.source.Append(e.Source)
		s.cluster.Append(e.Cluster)
		s.team.Append(e.Team)
		s.project.Append(e.Project)
		s.queue.Append(e.Queue)
		s.pool.Append(e.Pool)
		s.model.Append(e.ModelName)
		s.work.Append(e.Workload)
		s.gpus.Append(e.GPUs)
		s.card.Append(e.Card)
		s.nodes.Append(e.Nodes)
		s.uuids.Append(e.GPUUUIDs)
		s.status.Append(e.Status)
		s.exit.Append(e.ExitCode)
		s.attempt.Append(e.Attempt)
		s.rerun.Append(e.RerunOf)
		s.labels.Append(e.Labels)
		s.mig.Append(e.MIGProfile)
		s.migN.Append(e.MIGInstances)
		s.frac.Append(e.GPUFraction)
		s.sharing.Append(e.Sharing)
	}
	return added, nil
}

func (s *jobSink) blocks() []tableBlock { return []tableBlock{{table: "job_events", block: s.blk}} }
func (s *jobSink) reset()               { s.blk.Reset() }
func (s *jobSink) dedupper() *dedup     { return s.dedup }
