package dcgm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Recorded values: testdata/*.json hold what DCGM answers on one node, in the shape
// the engine interface returns it. A fixture is replayed by fakeEngine.
//
//	sampled_at, started_at  the Sample time and the source's start (XIDs before it are history)
//	supported_gpus          dcgmGetAllSupportedDevices
//	metric_groups           per GPU ID, dcgmProfGetSupportedMetricGroups' groups
//	metric_groups_error     per GPU ID, the error it returned instead
//	mig_hierarchy           dcgmGetGpuInstanceHierarchy entries
//	entities                per entity ("gpu/0", "gpu_i/3"), field values by DCGM field
//	                        name in any generation the alias table knows. A bare number
//	                        or string has the field's DCGM type and was sampled 500 ms
//	                        before sampled_at; {"type","value","status","age_ms"} says
//	                        otherwise. A watched field with no entry reads blank.
//	pid_info                per PID, dcgmGetPidInfo's per-GPU entries
//	pid_watch_error         dcgmWatchPidFields' error, if it failed
//	processes               what the ProcessLister (NVML) returns
//	health                  dcgmHealthCheck's incidents
//	watch_rejects           field IDs whose watch the host engine refuses
type fixture struct {
	Description       string                                `json:"description"`
	SampledAt         time.Time                             `json:"sampled_at"`
	StartedAt         time.Time                             `json:"started_at"`
	SupportedGPUs     []uint32                              `json:"supported_gpus"`
	MetricGroups      map[string][]fxMetricGroup            `json:"metric_groups"`
	MetricGroupsError map[string]string                     `json:"metric_groups_error"`
	MIGHierarchy      []fxMIG                               `json:"mig_hierarchy"`
	Entities          map[string]map[string]json.RawMessage `json:"entities"`
	PIDInfo           map[string][]fxPID                    `json:"pid_info"`
	PIDWatchError     string                                `json:"pid_watch_error"`
	Processes         []fxProcess                           `json:"processes"`
	Health            []fxIncident                          `json:"health"`
	WatchRejects      []uint16                              `json:"watch_rejects"`
}

type fxMetricGroup struct {
	Major    uint     `json:"major"`
	Minor    uint     `json:"minor"`
	FieldIDs []uint16 `json:"field_ids"`
}

type fxMIG struct {
	Entity                string `json:"entity"`
	Parent                string `json:"parent"`
	GPUUUID               string `json:"gpu_uuid"`
	NVMLGPUIndex          uint32 `json:"nvml_gpu_index"`
	NVMLInstanceID        uint32 `json:"nvml_instance_id"`
	NVMLComputeInstanceID uint32 `json:"nvml_compute_instance_id"`
	NVMLMIGProfileID      uint32 `json:"nvml_mig_profile_id"`
	NVMLProfileSlices     uint32 `json:"nvml_profile_slices"`
}

type fxPID struct {
	GPU                uint32  `json:"gpu"`
	Name               string  `json:"name"`
	SMUtil             float64 `json:"sm_util"`
	MemUtil            float64 `json:"mem_util"`
	MaxMemoryUsedBytes int64   `json:"max_memory_used_bytes"`
}

type fxProcess struct {
	GPUUUID     string   `json:"gpu_uuid"`
	PID         uint32   `json:"pid"`
	ProcessName string   `json:"process_name"`
	Job         string   `json:"job"`
	FBUsedMiB   uint32   `json:"fb_used_mib"`
	SMUtil      *float32 `json:"sm_util"`
	MemUtil     *float32 `json:"mem_util"`
}

type fxIncident struct {
	Entity  string `json:"entity"`
	System  string `json:"system"`
	Health  string `json:"health"`
	Code    uint32 `json:"code"`
	Message string `json:"message"`
}

type fxValue struct {
	Type   string      `json:"type"`
	Value  json.Number `json:"value"`
	Status int32       `json:"status"`
	AgeMs  *int64      `json:"age_ms"`
}

func parseEntity(s string) (entity, error) {
	kind, id, ok := strings.Cut(s, "/")
	n, err := strconv.ParseUint(id, 10, 32)
	if !ok || err != nil {
		return entity{}, fmt.Errorf("entity %q: want kind/id", s)
	}
	for k, name := range entityKindNames {
		if name == kind {
			return entity{k, uint32(n)}, nil
		}
	}
	return entity{}, fmt.Errorf("entity %q: unknown kind %q", s, kind)
}

// loadFixture reads testdata/name.json and resolves every field name through the
// alias table.
func loadFixture(t testing.TB, name string) (*fixture, map[entity]map[uint16]value) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx fixture
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fx); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	values := map[entity]map[uint16]value{}
	for es, fields := range fx.Entities {
		e, err := parseEntity(es)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		values[e] = map[uint16]value{}
		for fname, rawv := range fields {
			f, ok := ResolveField(fname)
			if !ok {
				t.Fatalf("%s: %s: field %q is not in the alias table", name, es, fname)
			}
			v, err := fixtureValue(fx.SampledAt, e, f, rawv)
			if err != nil {
				t.Fatalf("%s: %s: %s: %v", name, es, fname, err)
			}
			values[e][f.ID] = v
		}
	}
	return &fx, values
}

func fixtureValue(at time.Time, e entity, f Field, raw json.RawMessage) (value, error) {
	i, _ := specIndex(f.ID)
	fv := fxValue{Type: string(fieldSpecs[i].Type)}
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		dec.UseNumber()
		if err := dec.Decode(&fv); err != nil {
			return value{}, err
		}
		if fv.Type == "" {
			fv.Type = string(fieldSpecs[i].Type)
		}
	} else if err := json.Unmarshal(raw, &fv.Value); err != nil {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return value{}, err
		}
		fv.Value = json.Number(s)
	}
	age := int64(500)
	if fv.AgeMs != nil {
		age = *fv.AgeMs
	}
	v := value{Entity: e, Field: f.ID, Type: valueType(fv.Type[0]), Status: fv.Status,
		TSMicros: at.Add(-time.Duration(age) * time.Millisecond).UnixMicro()}
	var err error
	switch v.Type {
	case typeInt64:
		v.Int, err = strconv.ParseInt(string(fv.Value), 10, 64)
	case typeDouble:
		v.Float, err = strconv.ParseFloat(string(fv.Value), 64)
	case typeString:
		v.Str = string(fv.Value)
	default:
		err = fmt.Errorf("type %q", fv.Type)
	}
	return v, err
}

// fakeEngine replays a fixture.
type fakeEngine struct {
	fx      *fixture
	values  map[entity]map[uint16]value
	watches []*fakeWatch
	rejects []uint16
	health  []incident
	pids    bool
	closed  bool
	// latestErr fails Latest when set.
	latestErr error
}

type fakeWatch struct {
	entities []entity
	fields   []uint16
	active   bool
}

var _ engine = (*fakeEngine)(nil)

func newFakeEngine(t testing.TB, name string) *fakeEngine {
	t.Helper()
	fx, values := loadFixture(t, name)
	f := &fakeEngine{fx: fx, values: values, rejects: fx.WatchRejects}
	for _, in := range fx.Health {
		e, err := parseEntity(in.Entity)
		if err != nil {
			t.Fatal(err)
		}
		sys := healthSystem(0)
		for k, n := range healthSystemNames {
			if n == in.System {
				sys = k
			}
		}
		res := map[string]healthResult{"warning": healthResultWarn, "failure": healthResultFail, "pass": healthResultPass}[in.Health]
		f.health = append(f.health, incident{Entity: e, System: sys, Health: res, Code: in.Code, Message: in.Message})
	}
	return f
}

var errFakeClosed = errors.New("fake engine used after Close")

func (f *fakeEngine) SupportedGPUs() ([]uint32, error) {
	if f.closed {
		return nil, errFakeClosed
	}
	return slices.Clone(f.fx.SupportedGPUs), nil
}

func (f *fakeEngine) MIGHierarchy() ([]migEntry, error) {
	var out []migEntry
	for _, m := range f.fx.MIGHierarchy {
		e, err1 := parseEntity(m.Entity)
		p, err2 := parseEntity(m.Parent)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		out = append(out, migEntry{Entity: e, Parent: p, ParentUUID: m.GPUUUID, NVMLGPUIndex: m.NVMLGPUIndex,
			NVMLInstanceID: m.NVMLInstanceID, NVMLComputeInstanceID: m.NVMLComputeInstanceID,
			NVMLProfileID: m.NVMLMIGProfileID, Slices: m.NVMLProfileSlices})
	}
	return out, nil
}

func (f *fakeEngine) SupportedProfFields(gpu uint32) ([]uint16, error) {
	key := strconv.FormatUint(uint64(gpu), 10)
	if msg, ok := f.fx.MetricGroupsError[key]; ok {
		return nil, errors.New(msg)
	}
	var ids []uint16
	for _, g := range f.fx.MetricGroups[key] {
		ids = append(ids, g.FieldIDs...)
	}
	return ids, nil
}

func (f *fakeEngine) Watch(entities []entity, fields []uint16, every, keepAge time.Duration) (watchID, error) {
	if f.closed {
		return 0, errFakeClosed
	}
	for _, id := range fields {
		if slices.Contains(f.rejects, id) {
			return 0, fmt.Errorf("error creating DCGM fields group: Unknown field id %d", id)
		}
	}
	f.watches = append(f.watches, &fakeWatch{entities: slices.Clone(entities), fields: slices.Clone(fields), active: true})
	return watchID(len(f.watches) - 1), nil
}

func (f *fakeEngine) Latest(w watchID) ([]value, error) {
	if f.closed {
		return nil, errFakeClosed
	}
	if f.latestErr != nil {
		return nil, f.latestErr
	}
	fw := f.watches[w]
	if !fw.active {
		return nil, fmt.Errorf("watch %d is not active", w)
	}
	out := make([]value, 0, len(fw.entities)*len(fw.fields))
	for _, e := range fw.entities {
		for _, id := range fw.fields {
			v, ok := f.values[e][id]
			if !ok {
				v = blankValue(e, id)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// blankValue is what DCGM returns for a watched field with no sample.
func blankValue(e entity, id uint16) value {
	v := value{Entity: e, Field: id, Type: typeInt64, Int: int64Blank}
	if i, ok := specIndex(id); ok {
		v.Type = fieldSpecs[i].Type
	}
	switch v.Type {
	case typeDouble:
		v.Float = fp64Blank
	case typeString:
		v.Str = strBlank
	}
	return v
}

func (f *fakeEngine) Unwatch(w watchID) error {
	f.watches[w].active = false
	return nil
}

func (f *fakeEngine) WatchPIDs(gpus []uint32, every, keepAge time.Duration) error {
	if f.fx.PIDWatchError != "" {
		return errors.New(f.fx.PIDWatchError)
	}
	f.pids = true
	return nil
}

func (f *fakeEngine) PIDInfo(pid uint32) ([]pidStat, error) {
	recs, ok := f.fx.PIDInfo[strconv.FormatUint(uint64(pid), 10)]
	if !ok {
		return nil, errors.New("No data is available")
	}
	out := make([]pidStat, len(recs))
	for i, r := range recs {
		out[i] = pidStat{GPU: r.GPU, Name: r.Name, SMUtilPct: r.SMUtil, MemUtilPct: r.MemUtil, MaxMemUsedBytes: r.MaxMemoryUsedBytes}
	}
	return out, nil
}

func (f *fakeEngine) WatchHealth(gpus []uint32, systems healthSystem) error { return nil }

func (f *fakeEngine) CheckHealth() ([]incident, error) { return slices.Clone(f.health), nil }

func (f *fakeEngine) Close() error {
	f.closed = true
	return nil
}

// activeWatches returns the fields watched per entity.
func (f *fakeEngine) activeWatches() map[entity][]uint16 {
	out := map[entity][]uint16{}
	for _, w := range f.watches {
		if w.active {
			for _, e := range w.entities {
				out[e] = append(out[e], w.fields...)
			}
		}
	}
	return out
}

// set replaces one recorded value.
func (f *fakeEngine) set(e entity, v value) {
	if f.values[e] == nil {
		f.values[e] = map[uint16]value{}
	}
	v.Entity = e
	f.values[e][v.Field] = v
}

// fixtureLister is the ProcessLister of a fixture.
type fixtureLister struct {
	procs []schemas.ProcessSample
	err   error
}

func newFixtureLister(fx *fixture) *fixtureLister {
	l := &fixtureLister{}
	for _, p := range fx.Processes {
		s := schemas.ProcessSample{GPUUUID: p.GPUUUID, PID: p.PID, ProcessName: p.ProcessName, Job: p.Job,
			FBUsedMiB: p.FBUsedMiB, SMUtil: schemas.Missing, MemUtil: schemas.Missing}
		if p.SMUtil != nil {
			s.SMUtil = *p.SMUtil
		}
		if p.MemUtil != nil {
			s.MemUtil = *p.MemUtil
		}
		l.procs = append(l.procs, s)
	}
	return l
}

func (l *fixtureLister) Processes(ctx context.Context, at time.Time) ([]schemas.ProcessSample, error) {
	return slices.Clone(l.procs), l.err
}
