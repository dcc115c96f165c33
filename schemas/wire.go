package schemas

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/gpupool/gpupool/schemas/wirepb"
)

// SchemaVersion is the wire schema version this package writes and reads.
const SchemaVersion = 1

// Header names and values set on NATS messages so that a reader can route or reject
// a message before decoding it.
const (
	HeaderSchema        = "Gpupool-Schema"
	SchemaSamples       = "samples/v1"
	SchemaJobs          = "jobs/v1"
	ContentTypeProtobuf = "application/x-protobuf"
)

// SampleBatch is one collector publish: the samples of one node, usually of one tick.
// Rows' Cluster and Node are taken from the batch when they are empty.
type SampleBatch struct {
	Cluster     string
	Node        string
	CollectorID string
	Seq         uint64
	GPUs        []GPUSample
	Processes   []ProcessSample
}

// Rows returns the number of sample rows (GPU and process) in the batch.
func (b *SampleBatch) Rows() int { return len(b.GPUs) + len(b.Processes) }

// Reset empties the batch, keeping its allocated capacity.
func (b *SampleBatch) Reset() {
	*b = SampleBatch{GPUs: b.GPUs[:0], Processes: b.Processes[:0]}
}

// Encoder turns SampleBatches into wire bytes, reusing its buffers between calls. It
// is not safe for concurrent use.
type Encoder struct {
	pb   wirepb.SampleBatch
	gpus wirepb.GPUColumns
	proc wirepb.ProcessColumns
	dict map[string]uint32
}

// NewEncoder returns an Encoder.
func NewEncoder() *Encoder { return &Encoder{dict: make(map[string]uint32)} }

func (e *Encoder) ref(s string) uint32 {
	if s == "" {
		return 0
	}
	if i, ok := e.dict[s]; ok {
		return i
	}
	i := uint32(len(e.pb.Dict))
	e.pb.Dict = append(e.pb.Dict, s)
	e.dict[s] = i
	return i
}

// Encode appends the wire form of b to dst and returns it. It fails if a row names a
// cluster or node other than the batch's.
func (e *Encoder) Encode(dst []byte, b *SampleBatch) ([]byte, error) {
	clear(e.dict)
	e.pb = wirepb.SampleBatch{
		SchemaVersion: SchemaVersion,
		Cluster:       b.Cluster,
		Node:          b.Node,
		CollectorId:   b.CollectorID,
		Seq:           b.Seq,
		Dict:          append(e.pb.Dict[:0], ""),
	}
	g := &e.gpus
	resetGPUColumns(g)
	prev := int64(0)
	for i := range b.GPUs {
		s := &b.GPUs[i]
		if err := checkPlace(b, s.Cluster, s.Node); err != nil {
			return dst, fmt.Errorf("encode gpu row %d: %w", i, err)
		}
		g.TsDeltaMs = append(g.TsDeltaMs, s.TimeMs-prev)
		prev = s.TimeMs
		g.GpuUuid = append(g.GpuUuid, e.ref(s.GPUUUID))
		g.GpuIndex = append(g.GpuIndex, s.GPUIndex)
		g.Model = append(g.Model, e.ref(s.Model))
		g.DriverVersion = append(g.DriverVersion, e.ref(s.DriverVersion))
		g.Card = append(g.Card, e.ref(s.Card))
		g.MigProfile = append(g.MigProfile, e.ref(s.MIGProfile))
		g.FbTotalMib = append(g.FbTotalMib, s.FBTotalMiB)
		g.FbUsedMib = append(g.FbUsedMib, s.FBUsedMiB)
		g.GrEngineActive = append(g.GrEngineActive, s.GrEngineActive)
		g.SmActive = append(g.SmActive, s.SMActive)
		g.SmOccupancy = append(g.SmOccupancy, s.SMOccupancy)
		g.TensorActive = append(g.TensorActive, s.TensorActive)
		g.DramActive = append(g.DramActive, s.DRAMActive)
		g.GpuUtil = append(g.GpuUtil, s.GPUUtil)
		g.PcieTxBytesPerS = append(g.PcieTxBytesPerS, s.PCIeTxBytesPerS)
		g.PcieRxBytesPerS = append(g.PcieRxBytesPerS, s.PCIeRxBytesPerS)
		g.PowerW = append(g.PowerW, s.PowerW)
		g.EnergyMillij = append(g.EnergyMillij, s.EnergyMilliJ)
		g.TempC = append(g.TempC, s.TempC)
		g.Xid = append(g.Xid, s.XID)
		g.ClockEventReasons = append(g.ClockEventReasons, s.ClockEventReasons)
	}
	// A source that knows no driver version sends no column (the reader's default
	// is ""), so such a batch is as small as before the column existed.
	if !slices.ContainsFunc(g.DriverVersion, func(r uint32) bool { return r != 0 }) {
		g.DriverVersion = g.DriverVersion[:0]
	}
	p := &e.proc
	resetProcessColumns(p)
	prev = 0
	for i := range b.Processes {
		s := &b.Processes[i]
		if err := checkPlace(b, s.Cluster, s.Node); err != nil {
			return dst, fmt.Errorf("encode process row %d: %w", i, err)
		}
		p.TsDeltaMs = append(p.TsDeltaMs, s.TimeMs-prev)
		prev = s.TimeMs
		p.GpuUuid = append(p.GpuUuid, e.ref(s.GPUUUID))
		p.Pid = append(p.Pid, s.PID)
		p.ProcessName = append(p.ProcessName, e.ref(s.ProcessName))
		p.Job = append(p.Job, e.ref(s.Job))
		p.FbUsedMib = append(p.FbUsedMib, s.FBUsedMiB)
		p.SmUtil = append(p.SmUtil, s.SMUtil)
		p.MemUtil = append(p.MemUtil, s.MemUtil)
	}
	if len(b.GPUs) > 0 {
		e.pb.Gpus = g
	}
	if len(b.Processes) > 0 {
		e.pb.Processes = p
	}
	return proto.MarshalOptions{}.MarshalAppend(dst, &e.pb)
}

func checkPlace(b *SampleBatch, cluster, node string) error {
	if cluster != "" && cluster != b.Cluster {
		return fmt.Errorf("cluster %q differs from the batch's %q", cluster, b.Cluster)
	}
	if node != "" && node != b.Node {
		return fmt.Errorf("node %q differs from the batch's %q", node, b.Node)
	}
	return nil
}

func resetGPUColumns(g *wirepb.GPUColumns) {
	*g = wirepb.GPUColumns{
		TsDeltaMs: g.TsDeltaMs[:0], GpuUuid: g.GpuUuid[:0], GpuIndex: g.GpuIndex[:0],
		Model: g.Model[:0], Card: g.Card[:0], MigProfile: g.MigProfile[:0],
		FbTotalMib: g.FbTotalMib[:0], FbUsedMib: g.FbUsedMib[:0],
		GrEngineActive: g.GrEngineActive[:0], SmActive: g.SmActive[:0], SmOccupancy: g.SmOccupancy[:0],
		TensorActive: g.TensorActive[:0], DramActive: g.DramActive[:0], GpuUtil: g.GpuUtil[:0],
		PcieTxBytesPerS: g.PcieTxBytesPerS[:0], PcieRxBytesPerS: g.PcieRxBytesPerS[:0],
		PowerW: g.PowerW[:0], EnergyMillij: g.EnergyMillij[:0], TempC: g.TempC[:0], Xid: g.Xid[:0],
		ClockEventReasons: g.ClockEventReasons[:0], DriverVersion: g.DriverVersion[:0],
	}
}

func resetProcessColumns(p *wirepb.ProcessColumns) {
	*p = wirepb.ProcessColumns{
		TsDeltaMs: p.TsDeltaMs[:0], GpuUuid: p.GpuUuid[:0], Pid: p.Pid[:0],
		ProcessName: p.ProcessName[:0], Job: p.Job[:0], FbUsedMib: p.FbUsedMib[:0],
		SmUtil: p.SmUtil[:0], MemUtil: p.MemUtil[:0],
	}
}

// Decoder turns wire bytes into SampleBatches, reusing its buffers between calls. It
// is not safe for concurrent use.
type Decoder struct {
	pb wirepb.SampleBatch
}

// NewDecoder returns a Decoder.
func NewDecoder() *Decoder { return &Decoder{} }

// column checks that a column is absent (0 values: the reader's default applies) or
// has exactly n values.
func column(name string, got, n int) error {
	if got != 0 && got != n {
		return fmt.Errorf("%w: column %s has %d values, want %d", ErrMalformed, name, got, n)
	}
	return nil
}

func f32(col []float32, i int) float32 {
	if len(col) == 0 {
		return Missing
	}
	return col[i]
}

func u32(col []uint32, i int) uint32 {
	if len(col) == 0 {
		return 0
	}
	return col[i]
}

func u64(col []uint64, i int) uint64 {
	if len(col) == 0 {
		return 0
	}
	return col[i]
}

// DecodeColumns parses data and checks its structure — schema version, column
// lengths, required columns, dictionary references — without building rows. The
// result belongs to the decoder and is valid until its next call. Ingest reads the
// columns directly; Decode builds rows from them.
func (d *Decoder) DecodeColumns(data []byte) (*wirepb.SampleBatch, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty message (0 bytes; a sample batch declares at least its schema version)", ErrMalformed)
	}
	if err := unmarshalSamples(data, &d.pb); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	pb := &d.pb
	if pb.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%w: sample batch declares version %d, this reader reads %d", ErrSchemaVersion, pb.SchemaVersion, SchemaVersion)
	}
	if g := pb.Gpus; g != nil {
		if err := checkGPUColumns(g, len(pb.Dict)); err != nil {
			return nil, err
		}
	}
	if p := pb.Processes; p != nil {
		if err := checkProcessColumns(p, len(pb.Dict)); err != nil {
			return nil, err
		}
	}
	return pb, nil
}

// Decode parses data into b (replacing its contents). The strings in b share memory
// with the decoder's buffers and stay valid until the next call.
func (d *Decoder) Decode(data []byte, b *SampleBatch) error {
	pb, err := d.DecodeColumns(data)
	if err != nil {
		return err
	}
	b.Reset()
	b.Cluster, b.Node, b.CollectorID, b.Seq = pb.Cluster, pb.Node, pb.CollectorId, pb.Seq
	dict := pb.Dict
	str := func(refs []uint32, i int) string {
		if len(refs) == 0 {
			return ""
		}
		return dict[refs[i]]
	}
	if g := pb.Gpus; g != nil {
		ts := int64(0)
		for i := range g.TsDeltaMs {
			ts += g.TsDeltaMs[i]
			b.GPUs = append(b.GPUs, GPUSample{
				TimeMs: ts, Cluster: b.Cluster, Node: b.Node,
				GPUUUID: str(g.GpuUuid, i), Model: str(g.Model, i), DriverVersion: str(g.DriverVersion, i), Card: str(g.Card, i), MIGProfile: str(g.MigProfile, i),
				GPUIndex: u32(g.GpuIndex, i), FBTotalMiB: u32(g.FbTotalMib, i), FBUsedMiB: u32(g.FbUsedMib, i),
				GrEngineActive: f32(g.GrEngineActive, i), SMActive: f32(g.SmActive, i),
				SMOccupancy: f32(g.SmOccupancy, i), TensorActive: f32(g.TensorActive, i),
				DRAMActive: f32(g.DramActive, i), GPUUtil: f32(g.GpuUtil, i),
				PCIeTxBytesPerS: f32(g.PcieTxBytesPerS, i), PCIeRxBytesPerS: f32(g.PcieRxBytesPerS, i),
				PowerW: f32(g.PowerW, i), EnergyMilliJ: u64(g.EnergyMillij, i), TempC: f32(g.TempC, i),
				XID: u32(g.Xid, i), ClockEventReasons: u64(g.ClockEventReasons, i),
			})
		}
	}
	if p := pb.Processes; p != nil {
		ts := int64(0)
		for i := range p.TsDeltaMs {
			ts += p.TsDeltaMs[i]
			b.Processes = append(b.Processes, ProcessSample{
				TimeMs: ts, Cluster: b.Cluster, Node: b.Node, PID: p.Pid[i],
				GPUUUID: str(p.GpuUuid, i), ProcessName: str(p.ProcessName, i), Job: str(p.Job, i),
				FBUsedMiB: u32(p.FbUsedMib, i), SMUtil: f32(p.SmUtil, i), MemUtil: f32(p.MemUtil, i),
			})
		}
	}
	return nil
}

type namedLen struct {
	name string
	len  int
}

// checkLengths checks that every column is absent or has n values.
func checkLengths(prefix string, n int, cols []namedLen) error {
	for _, c := range cols {
		if err := column(prefix+c.name, c.len, n); err != nil {
			return err
		}
	}
	return nil
}

// checkRefs checks that every dictionary reference is inside the dictionary.
func checkRefs(col string, refs []uint32, dictLen int) error {
	for i, r := range refs {
		if int(r) >= dictLen {
			return fmt.Errorf("%w: column %s row %d references string %d of %d", ErrMalformed, col, i, r, dictLen)
		}
	}
	return nil
}

func checkGPUColumns(g *wirepb.GPUColumns, dictLen int) error {
	n := len(g.TsDeltaMs)
	if err := checkLengths("gpus.", n, []namedLen{
		{"gpu_uuid", len(g.GpuUuid)}, {"gpu_index", len(g.GpuIndex)}, {"model", len(g.Model)},
		{"card", len(g.Card)}, {"mig_profile", len(g.MigProfile)}, {"fb_total_mib", len(g.FbTotalMib)},
		{"fb_used_mib", len(g.FbUsedMib)}, {"gr_engine_active", len(g.GrEngineActive)},
		{"sm_active", len(g.SmActive)}, {"sm_occupancy", len(g.SmOccupancy)},
		{"tensor_active", len(g.TensorActive)}, {"dram_active", len(g.DramActive)},
		{"gpu_util", len(g.GpuUtil)}, {"pcie_tx_bytes_per_s", len(g.PcieTxBytesPerS)},
		{"pcie_rx_bytes_per_s", len(g.PcieRxBytesPerS)}, {"power_w", len(g.PowerW)},
		{"energy_mj", len(g.EnergyMillij)}, {"temp_c", len(g.TempC)}, {"xid", len(g.Xid)},
		{"clock_event_reasons", len(g.ClockEventReasons)}, {"driver_version", len(g.DriverVersion)},
	}); err != nil {
		return err
	}
	if len(g.GpuUuid) == 0 && n > 0 {
		return fmt.Errorf("%w: column gpus.gpu_uuid is required", ErrMalformed)
	}
	for _, c := range []struct {
		name string
		refs []uint32
	}{{"gpus.gpu_uuid", g.GpuUuid}, {"gpus.model", g.Model}, {"gpus.card", g.Card}, {"gpus.mig_profile", g.MigProfile}, {"gpus.driver_version", g.DriverVersion}} {
		if err := checkRefs(c.name, c.refs, dictLen); err != nil {
			return err
		}
	}
	return nil
}

func checkProcessColumns(p *wirepb.ProcessColumns, dictLen int) error {
	n := len(p.TsDeltaMs)
	if err := checkLengths("processes.", n, []namedLen{
		{"gpu_uuid", len(p.GpuUuid)}, {"pid", len(p.Pid)}, {"process_name", len(p.ProcessName)},
		{"job", len(p.Job)}, {"fb_used_mib", len(p.FbUsedMib)}, {"sm_util", len(p.SmUtil)},
		{"mem_util", len(p.MemUtil)},
	}); err != nil {
		return err
	}
	if n > 0 && (len(p.GpuUuid) == 0 || len(p.Pid) == 0) {
		return fmt.Errorf("%w: columns processes.gpu_uuid and processes.pid are required", ErrMalformed)
	}
	for _, c := range []struct {
		name string
		refs []uint32
	}{{"processes.gpu_uuid", p.GpuUuid}, {"processes.process_name", p.ProcessName}, {"processes.job", p.Job}} {
		if err := checkRefs(c.name, c.refs, dictLen); err != nil {
			return err
		}
	}
	return nil
}
