package trace

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

type span struct{ start, end int }

// decoder turns one line into a Record. A first pass checks the JSON and notes
// where each known field's value is (the `type` may come last); a second decodes
// the fields the line's type has. It is reused from line to line.
type decoder struct {
	sc      scanner
	line    []byte
	spans   [nFields]span
	seen    uint64
	onField func(key []byte, start, end int)
	reason  string
	strs    interner
	// last holds each string field's previous value: consecutive lines mostly
	// repeat the cluster, node, model and job.
	last [nFields]string

	cardKey cardKey
	card    string

	lastTs   []byte
	lastTsMs int64
}

func newDecoder() *decoder {
	d := &decoder{strs: interner{m: make(map[string]string)}}
	d.onField = func(key []byte, start, end int) {
		f, ok := lookupField(key)
		if !ok {
			return
		}
		if d.line[start] == 'n' { // null: as if absent
			d.seen &^= 1 << f
			return
		}
		d.seen |= 1 << f
		d.spans[f] = span{start, end}
	}
	return d
}

// decode parses line; on failure it returns the reason.
func (d *decoder) decode(line []byte) (Record, string) {
	d.line, d.seen, d.reason = line, 0, ""
	d.sc.reset(line)
	if err := d.sc.object(d.onField); err != nil {
		return Record{}, err.Error()
	}
	if err := d.sc.end(); err != nil {
		return Record{}, err.Error()
	}
	if !d.has(fType) {
		return Record{}, `missing required field "type"`
	}
	typ := d.bytes(fType)
	if d.reason != "" {
		return Record{}, d.reason
	}
	var rec Record
	switch string(typ) {
	case "gpu":
		rec = d.gpu()
	case "process":
		rec = d.process()
	case "job":
		rec = d.job()
	default:
		return Record{}, fmt.Sprintf("unknown type %q (want gpu, process or job)", typ)
	}
	if d.reason != "" {
		return Record{}, d.reason
	}
	return rec, ""
}

func (d *decoder) has(f fieldID) bool { return d.seen&(1<<f) != 0 }

// require reports the first of fs that is missing.
func (d *decoder) require(fs ...fieldID) bool {
	for _, f := range fs {
		if !d.has(f) {
			d.reason = fmt.Sprintf("missing required field %q", fieldNames[f])
			return false
		}
	}
	return true
}

func (d *decoder) fail(f fieldID, format string, args ...any) {
	if d.reason == "" {
		d.reason = fieldNames[f] + ": " + fmt.Sprintf(format, args...)
	}
}

func (d *decoder) value(f fieldID) []byte { sp := d.spans[f]; return d.line[sp.start:sp.end] }

func kindOf(v []byte) string {
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// bytes returns a string field's value, valid until the next string is read; nil
// if absent.
func (d *decoder) bytes(f fieldID) []byte {
	if !d.has(f) {
		return nil
	}
	v := d.value(f)
	if v[0] != '"' {
		d.fail(f, "want a string, got %s", kindOf(v))
		return nil
	}
	d.sc.reset(v)
	b, err := d.sc.str()
	if err != nil { // cannot happen: the first pass checked it
		d.fail(f, "%v", err)
	}
	return b
}

func (d *decoder) str(f fieldID) string {
	b := d.bytes(f)
	if len(b) == 0 {
		return ""
	}
	if string(b) == d.last[f] {
		return d.last[f]
	}
	s := d.strs.get(b)
	d.last[f] = s
	return s
}

type cardKey struct {
	model, migProfile string
	mig               bool
	fbTotalMiB        uint32
}

// cardOf is Card, remembering the last answer.
func (d *decoder) cardOf(s *schemas.GPUSample) string {
	k := cardKey{s.Model, s.MIGProfile, strings.HasPrefix(s.GPUUUID, "MIG-"), s.FBTotalMiB}
	if k != d.cardKey || d.card == "" {
		d.cardKey, d.card = k, Card(s.Model, s.MIGProfile, s.GPUUUID, s.FBTotalMiB)
	}
	return d.card
}

func (d *decoder) strOr(f fieldID, def string) string {
	if s := d.str(f); s != "" {
		return s
	}
	return def
}

func (d *decoder) strList(f fieldID) []string {
	if !d.has(f) {
		return nil
	}
	v := d.value(f)
	if v[0] != '[' {
		d.fail(f, "want an array of strings, got %s", kindOf(v))
		return nil
	}
	var out []string
	d.sc.reset(v)
	d.sc.i++
	if d.sc.peek() == ']' {
		return nil
	}
	for {
		if d.sc.peek() != '"' {
			d.fail(f, "want an array of strings, got an element that is not a string")
			return nil
		}
		b, err := d.sc.str()
		if err != nil {
			d.fail(f, "%v", err)
			return nil
		}
		out = append(out, d.strs.get(b))
		if d.sc.peek() == ']' {
			return out
		}
		d.sc.i++ // ','
	}
}

func (d *decoder) number(f fieldID) ([]byte, bool) {
	if !d.has(f) {
		return nil, false
	}
	v := d.value(f)
	if c := v[0]; c != '-' && (c < '0' || c > '9') {
		d.fail(f, "want a number, got %s", kindOf(v))
		return nil, false
	}
	return v, true
}

// f32 returns a float field, Missing if absent.
func (d *decoder) f32(f fieldID) float32 {
	lit, ok := d.number(f)
	if !ok {
		return schemas.Missing
	}
	if v, ok := parseFloat32Exact(lit); ok {
		return v
	}
	v, err := strconv.ParseFloat(string(lit), 32)
	if err != nil {
		d.fail(f, "%s is out of range", lit)
		return schemas.Missing
	}
	return float32(v)
}

// uint returns an unsigned integer field up to max, 0 if absent. With round, a
// fractional value is rounded (memory in MiB); without, it is an error.
func (d *decoder) uint(f fieldID, max uint64, round bool) uint64 {
	lit, ok := d.number(f)
	if !ok {
		return 0
	}
	if n, ok := parseDigits(lit); ok {
		if n > max {
			d.fail(f, "%s is out of range (at most %d)", lit, max)
			return 0
		}
		return n
	}
	v, err := strconv.ParseFloat(string(lit), 64)
	switch {
	case err != nil:
		d.fail(f, "%s is out of range (at most %d)", lit, max)
		return 0
	case round:
		v = math.Round(v)
	case v != math.Trunc(v):
		d.fail(f, "%s is not an integer", lit)
		return 0
	}
	switch {
	case v < 0:
		d.fail(f, "%s is negative", lit)
		return 0
	case v >= 0x1p64 || v > float64(max):
		d.fail(f, "%s is out of range (at most %d)", lit, max)
		return 0
	}
	return uint64(v)
}

// int32 returns a signed integer field, 0 if absent.
func (d *decoder) int32(f fieldID) int32 {
	lit, ok := d.number(f)
	if !ok {
		return 0
	}
	v, err := strconv.ParseFloat(string(lit), 64)
	switch {
	case err != nil || v < math.MinInt32 || v > math.MaxInt32:
		d.fail(f, "%s is out of range", lit)
		return 0
	case v != math.Trunc(v):
		d.fail(f, "%s is not an integer", lit)
		return 0
	}
	return int32(v)
}

// ts returns the record time in ms; the previous line's time is reused when the
// text is the same, as it mostly is.
func (d *decoder) ts() int64 {
	b := d.bytes(fTs)
	if d.reason != "" {
		return 0
	}
	if bytes.Equal(b, d.lastTs) && d.lastTs != nil {
		return d.lastTsMs
	}
	t, err := time.Parse(time.RFC3339, string(b))
	if err != nil {
		d.fail(fTs, "%q is not an RFC 3339 time (want e.g. 2026-12-01T08:00:00.250Z)", b)
		return 0
	}
	ms := t.UnixMilli()
	if r := checkTime(ms); r != "" {
		d.reason = r
		return 0
	}
	d.lastTs, d.lastTsMs = append(d.lastTs[:0], b...), ms
	return ms
}

func (d *decoder) mib(f fieldID) uint32 { return uint32(d.uint(f, math.MaxUint32, true)) }

func (d *decoder) u32(f fieldID) uint32 { return uint32(d.uint(f, math.MaxUint32, false)) }

func (d *decoder) gpu() Record {
	if !d.require(fTs, fNode, fGPUUUID) {
		return Record{}
	}
	s := &schemas.GPUSample{
		TimeMs:          d.ts(),
		Cluster:         d.strOr(fCluster, DefaultCluster),
		Node:            d.str(fNode),
		GPUUUID:         d.str(fGPUUUID),
		GPUIndex:        uint32(d.uint(fGPUIndex, MaxGPUIndex, false)),
		Model:           d.str(fModel),
		MIGProfile:      d.str(fMIGProfile),
		FBTotalMiB:      d.mib(fFBTotal),
		FBUsedMiB:       d.mib(fFBUsed),
		GrEngineActive:  d.f32(fGrEngine),
		SMActive:        d.f32(fSMActive),
		SMOccupancy:     d.f32(fSMOccupancy),
		TensorActive:    d.f32(fTensor),
		DRAMActive:      d.f32(fDRAM),
		GPUUtil:         d.f32(fGPUUtil),
		PCIeTxBytesPerS: d.f32(fPCIeTx),
		PCIeRxBytesPerS: d.f32(fPCIeRx),
		PowerW:          d.f32(fPower),
		EnergyMilliJ:    d.uint(fEnergy, MaxEnergyMilliJ, true),
		TempC:           d.f32(fTemp),
		XID:             d.u32(fXID),
	}
	if d.reason != "" {
		return Record{}
	}
	if d.reason = checkGPU(s); d.reason != "" {
		return Record{}
	}
	s.Card = d.cardOf(s)
	return Record{Kind: KindGPU, GPU: s}
}

func (d *decoder) process() Record {
	if !d.require(fTs, fNode, fGPUUUID, fPID) {
		return Record{}
	}
	s := &schemas.ProcessSample{
		TimeMs:      d.ts(),
		Cluster:     d.strOr(fCluster, DefaultCluster),
		Node:        d.str(fNode),
		GPUUUID:     d.str(fGPUUUID),
		PID:         d.u32(fPID),
		ProcessName: d.str(fProcessName),
		Job:         d.str(fJob),
		FBUsedMiB:   uint32(d.uint(fFBUsed, uint64(schemas.BoundFBTotalMiB.Max), true)),
		SMUtil:      d.f32(fSMUtil),
		MemUtil:     d.f32(fMemUtil),
	}
	if d.reason != "" {
		return Record{}
	}
	if d.reason = checkProcess(s); d.reason != "" {
		return Record{}
	}
	return Record{Kind: KindProcess, Process: s}
}

func (d *decoder) job() Record {
	if !d.require(fTs, fJob, fEvent) {
		return Record{}
	}
	e := &schemas.JobEvent{
		TimeMs:    d.ts(),
		Job:       d.str(fJob),
		Event:     d.str(fEvent),
		Cluster:   d.strOr(fCluster, DefaultCluster),
		Team:      d.str(fTeam),
		Project:   d.str(fProject),
		Queue:     d.str(fQueue),
		Pool:      d.str(fPool),
		ModelName: d.str(fModelName),
		Workload:  d.str(fWorkload),
		GPUs:      uint32(d.uint(fGPUs, MaxJobGPUs, false)),
		Card:      d.str(fCard),
		Nodes:     d.strList(fNodes),
		GPUUUIDs:  d.strList(fGPUUUIDs),
		Status:    d.str(fStatus),
		ExitCode:  d.int32(fExitCode),
		Attempt:   d.u32(fAttempt),
		RerunOf:   d.str(fRerunOf),
	}
	if d.reason != "" {
		return Record{}
	}
	if d.reason = checkJob(e); d.reason != "" {
		return Record{}
	}
	return Record{Kind: KindJob, Job: e}
}

// interner shares the strings that repeat from line to line (nodes, UUIDs, models,
// job keys), so a long trace holds one copy of each. It forgets everything when full.
type interner struct{ m map[string]string }

const (
	internMaxEntries = 1 << 16
	internMaxLen     = 128
)

func (in *interner) get(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > internMaxLen {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	if len(in.m) >= internMaxEntries {
		clear(in.m)
	}
	s := string(b)
	in.m[s] = s
	return s
}
