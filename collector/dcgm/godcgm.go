//go:build cgo

package dcgm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	dcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

// This is the only file that imports go-dcgm. go-dcgm aborts the process when any
// of its functions but Init runs before a successful Init (its C symbols are
// resolved by the dlopen in Init), so:
//   - openGoDCGM is the only constructor of goDCGM and returns one only when
//     dcgm.Init succeeded;
//   - every go-dcgm call is a method of *goDCGM made under live(), which fails
//     once Close has shut DCGM down.

// goDCGM is the engine backed by go-dcgm.
type goDCGM struct {
	mu sync.Mutex
	// shutdown is the cleanup dcgm.Init returned; nil once closed.
	shutdown func()
	// prefix names this process's DCGM groups, which live in a shared host engine
	// until destroyed.
	prefix  string
	nextID  int
	watches []*goWatch
	pids    *dcgm.GroupHandle
	health  *dcgm.GroupHandle
}

type goWatch struct {
	group    dcgm.GroupHandle
	fields   dcgm.FieldHandle
	entities []dcgm.GroupEntityPair
	ids      []dcgm.Short
}

var _ engine = (*goDCGM)(nil)

// errEngineClosed is returned by the engine after Close; it guards go-dcgm from
// being called after Shutdown.
var errEngineClosed = errors.New("dcgm engine is closed")

// openGoDCGM loads libdcgm.so.4 and starts DCGM embedded (cfg.Address empty) or
// connects to the host engine at cfg.Address.
func openGoDCGM(cfg Config) (*goDCGM, error) {
	var (
		cleanup func()
		err     error
	)
	network, addr := splitAddress(cfg.Address)
	switch network {
	case "":
		cleanup, err = dcgm.Init(dcgm.Embedded)
		if err != nil {
			return nil, fmt.Errorf("dcgm: start embedded host engine: %w (embedded mode needs root; or set --dcgm-address to a running nv-hostengine)", err)
		}
	case "unix":
		cleanup, err = dcgm.Init(dcgm.Standalone, addr, "1")
	default:
		cleanup, err = dcgm.Init(dcgm.Standalone, addr, "0")
	}
	if err != nil {
		return nil, fmt.Errorf("dcgm: connect to nv-hostengine at %s: %w (is nv-hostengine or dcgm-exporter's host engine running and listening there?)", cfg.Address, err)
	}
	if cleanup == nil {
		return nil, errors.New("dcgm: dcgm.Init returned no cleanup function")
	}
	return &goDCGM{shutdown: cleanup, prefix: fmt.Sprintf("gpupool-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)}, nil
}

// live locks e and fails if DCGM has been shut down; callers unlock.
func (e *goDCGM) live() error {
	e.mu.Lock()
	if e.shutdown == nil {
		e.mu.Unlock()
		return errEngineClosed
	}
	return nil
}

func (e *goDCGM) name(kind string) string {
	e.nextID++
	return fmt.Sprintf("%s-%s-%d", e.prefix, kind, e.nextID)
}

func (e *goDCGM) SupportedGPUs() ([]uint32, error) {
	if err := e.live(); err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	ids, err := dcgm.GetSupportedDevices()
	if err != nil {
		return nil, err
	}
	out := make([]uint32, len(ids))
	for i, id := range ids {
		out[i] = uint32(id)
	}
	return out, nil
}

func (e *goDCGM) MIGHierarchy() ([]migEntry, error) {
	if err := e.live(); err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	h, err := dcgm.GetGPUInstanceHierarchy()
	if err != nil {
		return nil, err
	}
	out := make([]migEntry, 0, h.Count)
	for i := uint(0); i < h.Count && i < uint(len(h.EntityList)); i++ {
		m := h.EntityList[i]
		ek, ok1 := kindFromDCGM(m.Entity.EntityGroupId)
		pk, ok2 := kindFromDCGM(m.Parent.EntityGroupId)
		if !ok1 || !ok2 {
			continue
		}
		out = append(out, migEntry{
			Entity:                entity{ek, uint32(m.Entity.EntityId)},
			Parent:                entity{pk, uint32(m.Parent.EntityId)},
			ParentUUID:            m.Info.GpuUuid,
			NVMLGPUIndex:          uint32(m.Info.NvmlGpuIndex),
			NVMLInstanceID:        uint32(m.Info.NvmlInstanceId),
			NVMLComputeInstanceID: uint32(m.Info.NvmlComputeInstanceId),
			NVMLProfileID:         uint32(m.Info.NvmlMigProfileId),
			Slices:                uint32(m.Info.NvmlProfileSlices),
		})
	}
	return out, nil
}

func (e *goDCGM) SupportedProfFields(gpu uint32) ([]uint16, error) {
	if err := e.live(); err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	groups, err := dcgm.GetSupportedMetricGroups(uint(gpu))
	if err != nil {
		return nil, err
	}
	var ids []uint16
	for _, g := range groups {
		for _, id := range g.FieldIds {
			ids = append(ids, uint16(id))
		}
	}
	return ids, nil
}

func (e *goDCGM) Watch(entities []entity, fields []uint16, every, keepAge time.Duration) (watchID, error) {
	if err := e.live(); err != nil {
		return 0, err
	}
	defer e.mu.Unlock()
	if len(entities) == 0 || len(fields) == 0 {
		return 0, errors.New("watch: no entities or no fields")
	}
	w := &goWatch{}
	for _, f := range fields {
		w.ids = append(w.ids, dcgm.Short(f))
	}
	var err error
	if w.fields, err = dcgm.FieldGroupCreate(e.name("fields"), w.ids); err != nil {
		return 0, err
	}
	if w.group, err = dcgm.CreateGroup(e.name("group")); err != nil {
		_ = dcgm.FieldGroupDestroy(w.fields)
		return 0, err
	}
	for _, en := range entities {
		p := dcgm.GroupEntityPair{EntityGroupId: kindToDCGM(en.Kind), EntityId: uint(en.ID)}
		if err = dcgm.AddEntityToGroup(w.group, p.EntityGroupId, p.EntityId); err != nil {
			break
		}
		w.entities = append(w.entities, p)
	}
	if err == nil {
		err = dcgm.WatchFieldsWithGroupEx(w.fields, w.group, every.Microseconds(), keepAge.Seconds(), 0)
	}
	if err != nil {
		_ = dcgm.DestroyGroup(w.group)
		_ = dcgm.FieldGroupDestroy(w.fields)
		return 0, err
	}
	e.watches = append(e.watches, w)
	return watchID(len(e.watches) - 1), nil
}

func (e *goDCGM) watch(id watchID) (*goWatch, error) {
	if int(id) < 0 || int(id) >= len(e.watches) || e.watches[id] == nil {
		return nil, fmt.Errorf("watch %d: no such watch", id)
	}
	return e.watches[id], nil
}

func (e *goDCGM) Latest(id watchID) ([]value, error) {
	if err := e.live(); err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	w, err := e.watch(id)
	if err != nil {
		return nil, err
	}
	fvs, err := dcgm.EntitiesGetLatestValues(w.entities, w.ids, 0)
	if err != nil {
		return nil, err
	}
	out := make([]value, 0, len(fvs))
	for i := range fvs {
		if v, ok := fromFieldValue(&fvs[i]); ok {
			out = append(out, v)
		}
	}
	return out, nil
}

func (e *goDCGM) Unwatch(id watchID) error {
	if err := e.live(); err != nil {
		return err
	}
	defer e.mu.Unlock()
	w, err := e.watch(id)
	if err != nil {
		return err
	}
	e.watches[id] = nil
	return unwatch(w)
}

func unwatch(w *goWatch) error {
	return errors.Join(dcgm.UnwatchFields(w.fields, w.group), dcgm.FieldGroupDestroy(w.fields), dcgm.DestroyGroup(w.group))
}

func (e *goDCGM) WatchPIDs(gpus []uint32, every, keepAge time.Duration) error {
	if err := e.live(); err != nil {
		return err
	}
	defer e.mu.Unlock()
	if e.pids != nil {
		return nil
	}
	ids := make([]uint, len(gpus))
	for i, g := range gpus {
		ids[i] = uint(g)
	}
	g, err := dcgm.WatchPidFieldsEx(every, keepAge, 0, ids...)
	if err != nil {
		return err
	}
	e.pids = &g
	return nil
}

func (e *goDCGM) PIDInfo(pid uint32) ([]pidStat, error) {
	if err := e.live(); err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	if e.pids == nil {
		return nil, errors.New("process watch not started")
	}
	infos, err := dcgm.GetProcessInfo(*e.pids, uint(pid))
	if err != nil {
		return nil, err
	}
	out := make([]pidStat, len(infos))
	for i, in := range infos {
		out[i] = pidStat{
			GPU:             uint32(in.GPU),
			Name:            in.Name,
			SMUtilPct:       deref(in.ProcessUtilization.SmUtil),
			MemUtilPct:      deref(in.ProcessUtilization.MemUtil),
			MaxMemUsedBytes: in.Memory.GlobalUsed,
		}
	}
	return out, nil
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func (e *goDCGM) WatchHealth(gpus []uint32, systems healthSystem) error {
	if err := e.live(); err != nil {
		return err
	}
	defer e.mu.Unlock()
	if e.health != nil {
		return nil
	}
	g, err := dcgm.CreateGroup(e.name("health"))
	if err != nil {
		return err
	}
	for _, gpu := range gpus {
		if err = dcgm.AddToGroup(g, uint(gpu)); err != nil {
			break
		}
	}
	if err == nil {
		err = dcgm.HealthSet(g, dcgm.HealthSystem(systems))
	}
	if err != nil {
		_ = dcgm.DestroyGroup(g)
		return err
	}
	e.health = &g
	return nil
}

func (e *goDCGM) CheckHealth() ([]incident, error) {
	if err := e.live(); err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	if e.health == nil {
		return nil, errors.New("health watch not started")
	}
	resp, err := dcgm.HealthCheck(*e.health)
	if err != nil {
		return nil, err
	}
	out := make([]incident, 0, len(resp.Incidents))
	for _, in := range resp.Incidents {
		k, ok := kindFromDCGM(in.EntityInfo.EntityGroupId)
		if !ok {
			continue
		}
		out = append(out, incident{
			Entity:  entity{k, uint32(in.EntityInfo.EntityId)},
			System:  healthSystem(in.System),
			Health:  healthResult(in.Health),
			Code:    uint32(in.Error.Code),
			Message: in.Error.Message,
		})
	}
	return out, nil
}

// Close destroys this process's DCGM groups (a shared host engine would keep them)
// and shuts DCGM down.
func (e *goDCGM) Close() error {
	if err := e.live(); err != nil {
		return nil
	}
	defer e.mu.Unlock()
	var errs []error
	for i, w := range e.watches {
		if w != nil {
			errs = append(errs, unwatch(w))
			e.watches[i] = nil
		}
	}
	for _, g := range []*dcgm.GroupHandle{e.pids, e.health} {
		if g != nil {
			errs = append(errs, dcgm.DestroyGroup(*g))
		}
	}
	e.pids, e.health = nil, nil
	shutdown := e.shutdown
	e.shutdown = nil
	shutdown()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dcgm: close: %w", err)
	}
	return nil
}

func kindFromDCGM(g dcgm.Field_Entity_Group) (entityKind, bool) {
	switch g {
	case dcgm.FE_GPU:
		return entityGPU, true
	case dcgm.FE_GPU_I:
		return entityGPUInstance, true
	case dcgm.FE_GPU_CI:
		return entityComputeInstance, true
	}
	return 0, false
}

func kindToDCGM(k entityKind) dcgm.Field_Entity_Group {
	switch k {
	case entityGPUInstance:
		return dcgm.FE_GPU_I
	case entityComputeInstance:
		return dcgm.FE_GPU_CI
	}
	return dcgm.FE_GPU
}

// fromFieldValue converts a go-dcgm value. It reads the value bytes itself (DCGM
// stores them in host byte order) instead of calling go-dcgm's accessors, so that it
// is pure Go and tested without libdcgm.
func fromFieldValue(fv *dcgm.FieldValue_v2) (value, bool) {
	k, ok := kindFromDCGM(fv.EntityGroupId)
	if !ok {
		return value{}, false
	}
	v := value{
		Entity:   entity{k, uint32(fv.EntityID)},
		Field:    uint16(fv.FieldID),
		Type:     valueType(fv.FieldType),
		Status:   int32(fv.Status),
		TSMicros: fv.TS,
	}
	switch fv.FieldType {
	case dcgm.DCGM_FT_INT64, dcgm.DCGM_FT_TIMESTAMP:
		v.Int = int64(binary.NativeEndian.Uint64(fv.Value[:8]))
	case dcgm.DCGM_FT_DOUBLE:
		v.Float = math.Float64frombits(binary.NativeEndian.Uint64(fv.Value[:8]))
	case dcgm.DCGM_FT_STRING:
		if fv.StringValue != nil {
			v.Str = *fv.StringValue
		} else if i := bytes.IndexByte(fv.Value[:], 0); i >= 0 {
			v.Str = string(fv.Value[:i])
		} else {
			v.Str = string(fv.Value[:])
		}
	}
	return v, true
}
