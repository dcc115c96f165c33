package dcgm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Setup: find the GPUs and MIG instances, decide which fields to watch on which
// entity (profiling fields only where supported), and start the watches.

// gpuInfo is one physical GPU.
type gpuInfo struct {
	ID         uint32 // DCGM GPU ID
	Index      uint32 // NVML index
	UUID       string
	Model      string
	Card       string
	Driver     string // DCGM_FI_DRIVER_VERSION; "" when not reported
	FBTotalMiB uint32
	// MaxSlices is DCGM_FI_DEV_MIG_MAX_SLICES; 0 when not reported.
	MaxSlices uint32
	// Prof are the profiling fields DCGM supports on this GPU.
	Prof specSet
	slot int
	// xid is the XID reported for this GPU in the current tick.
	xid uint32
}

// unit is one row per tick: a whole GPU, or a MIG GPU instance.
type unit struct {
	UUID       string
	Index      uint32
	Model      string
	Card       string
	Driver     string
	MIGProfile string
	// FBTotalMiB is the memory found at start, used while the field is blank.
	FBTotalMiB uint32
	Self       entity
	// GPU is the DCGM ID of the physical GPU.
	GPU uint32
	MIG bool
	// Share is the unit's share of its GPU's power and energy: compute slices over
	// the card's slices for a MIG instance, 1 for a whole GPU.
	Share float64

	selfSlot, gpuSlot int
	// supported is the field_supported gauge value last set per column (-1: unset).
	supported [numColumns]int8
	gauges    [numColumns]prometheus.Gauge
}

// watchSet is one DCGM watch: entities sharing one field list.
type watchSet struct {
	id       watchID
	entities []entity
	fields   specSet
}

// inventory fields read once: per GPU, and per MIG GPU instance.
var (
	gpuInventoryIDs = []uint16{fidGPUName, fidNVMLIndex, fidGPUUUID, fidMIGMaxSlices, fidFBTotal}
	giInventoryIDs  = []uint16{fidGPUUUID, fidFBTotal}
)

// setup finds the GPUs and starts every watch.
func (s *Source) setup(requested specSet) error {
	ids, err := s.eng.SupportedGPUs()
	if err != nil {
		return fmt.Errorf("dcgm: list GPUs: %w", err)
	}
	if len(ids) == 0 {
		return fmt.Errorf("dcgm: %w", ErrNoGPUs)
	}
	hier, err := s.eng.MIGHierarchy()
	if err != nil {
		s.log.Warn("MIG hierarchy unavailable; reporting whole GPUs", "err", err)
		hier = nil
	}
	if err := s.inventory(ids); err != nil {
		return err
	}
	var gis []entity
	for _, e := range hier {
		if e.Entity.Kind == entityGPUInstance && s.gpuByID(e.Parent.ID) != nil && e.Parent.Kind == entityGPU {
			gis = append(gis, e.Entity)
		}
	}
	var giStatic map[entity]*readings
	if len(gis) > 0 {
		if giStatic, err = s.readOnce(gis, giInventoryIDs); err != nil {
			s.log.Warn("MIG instance UUIDs and memory unavailable; deriving them", "err", err)
		}
	}
	for i := range s.gpus {
		g := &s.gpus[i]
		prof, err := s.eng.SupportedProfFields(g.ID)
		if err != nil {
			s.log.Info("profiling metrics not supported; they stay missing", "gpu_uuid", g.UUID, "model", g.Model, "err", err)
		}
		for _, id := range prof {
			if j, ok := specIndex(id); ok && fieldSpecs[j].Prof {
				g.Prof.add(j)
			}
		}
		g.slot = s.addSlot(entity{entityGPU, g.ID})
		mu := migUnits(g, hier, giStatic)
		if len(mu) == 0 {
			mu = []unit{wholeGPUUnit(g)}
		}
		for _, u := range mu {
			u.gpuSlot = g.slot
			u.selfSlot = s.addSlot(u.Self)
			s.units = append(s.units, u)
		}
	}
	for _, u := range s.units {
		s.names[u.Self] = u.UUID
		if !u.MIG {
			s.wholeByUUID[u.UUID] = u.GPU
		}
	}
	for _, e := range hier {
		if e.Entity.Kind == entityComputeInstance {
			if n, ok := s.names[e.Parent]; ok {
				s.names[e.Entity] = n
			}
		}
	}
	watched, err := s.startWatches(s.planWatches(requested))
	if err != nil {
		return err
	}
	s.initGauges(watched)
	s.startSideWatches()
	return nil
}

// inventory reads each GPU's UUID, model, index and memory.
func (s *Source) inventory(ids []uint32) error {
	ents := make([]entity, len(ids))
	for i, id := range ids {
		ents[i] = entity{entityGPU, id}
	}
	static, err := s.readOnce(ents, gpuInventoryIDs)
	if err != nil {
		return fmt.Errorf("dcgm: read GPU names and UUIDs: %w", err)
	}
	// The driver's version is a global field: read on its own, so that a host
	// engine that will not watch it on GPUs costs only the version.
	drivers, err := s.readOnce(ents, []uint16{fidDriverVersion})
	if err != nil {
		s.log.Info("driver version not read; samples carry none", "err", err)
	}
	field := func(r *readings, id uint16) (value, *fieldSpec, bool) {
		i, _ := specIndex(id)
		if r == nil || !r.have.has(i) {
			return value{}, nil, false
		}
		return r.vals[i], &fieldSpecs[i], true
	}
	for _, id := range ids {
		r := static[entity{entityGPU, id}]
		g := gpuInfo{ID: id, Index: id, Model: "unknown"}
		if v, _, ok := field(r, fidGPUUUID); ok {
			g.UUID, _ = text(v)
		}
		if g.UUID == "" {
			s.log.Warn("GPU has no UUID in DCGM; skipping it", "dcgm_gpu_id", id)
			continue
		}
		if v, _, ok := field(r, fidGPUName); ok {
			if m, rd := text(v); rd == readingOK {
				g.Model = m
			}
		}
		if v, _, ok := field(drivers[entity{entityGPU, id}], fidDriverVersion); ok {
			if d, rd := text(v); rd == readingOK {
				g.Driver = d
			}
		}
		if v, sp, ok := field(r, fidNVMLIndex); ok {
			if n, rd := number(v, sp); rd == readingOK {
				g.Index = uint32(n)
			}
		}
		if v, sp, ok := field(r, fidFBTotal); ok {
			if n, rd := number(v, sp); rd == readingOK {
				g.FBTotalMiB = uint32(min(n, math.MaxUint32))
			}
		}
		if v, sp, ok := field(r, fidMIGMaxSlices); ok {
			if n, rd := number(v, sp); rd == readingOK && n >= 1 && n <= 8 {
				g.MaxSlices = uint32(n)
			}
		}
		g.Card = cardOf(g.Model, g.FBTotalMiB)
		s.gpus = append(s.gpus, g)
	}
	if len(s.gpus) == 0 {
		return fmt.Errorf("dcgm: %w (no GPU has a UUID)", ErrNoGPUs)
	}
	return nil
}

// readOnce watches fields on entities just long enough to read them once.
func (s *Source) readOnce(ents []entity, ids []uint16) (map[entity]*readings, error) {
	w, err := s.eng.Watch(ents, ids, s.cfg.UpdateInterval, s.cfg.MaxKeepAge)
	if err != nil {
		return nil, err
	}
	vals, err := s.eng.Latest(w)
	if uerr := s.eng.Unwatch(w); uerr != nil {
		s.log.Warn("unwatch inventory fields failed", "err", uerr)
	}
	if err != nil {
		return nil, err
	}
	out := make(map[entity]*readings, len(ents))
	for _, v := range vals {
		i, ok := specIndex(v.Field)
		if !ok {
			continue
		}
		r := out[v.Entity]
		if r == nil {
			r = &readings{}
			out[v.Entity] = r
		}
		r.set(i, v)
	}
	return out, nil
}

func (s *Source) gpuByID(id uint32) *gpuInfo {
	for i := range s.gpus {
		if s.gpus[i].ID == id {
			return &s.gpus[i]
		}
	}
	return nil
}

func (s *Source) addSlot(e entity) int {
	if i, ok := s.slot[e]; ok {
		return i
	}
	s.slot[e] = len(s.table)
	s.table = append(s.table, readings{})
	return len(s.table) - 1
}

// wholeGPUFields are what a MIG instance's row takes from its physical GPU.
var wholeGPUFields = setOf(func(f fieldSpec) bool {
	switch f.Col {
	case colPower, colEnergy, colTemp, colXID, colClockEventReasons, colECCSBE, colECCDBE:
		return true
	}
	return false
})

// planWatches decides the fields of every entity and groups entities with the same
// fields into one watch. Profiling fields go only to GPUs that support them (and
// their MIG instances); a GPU without profiled PCIe counters gets the older
// throughput fields instead.
func (s *Source) planWatches(requested specSet) []watchSet {
	device := requested &^ profSpecs &^ inventorySpecs
	var sets []watchSet
	add := func(e entity, f specSet) {
		if f == 0 {
			return
		}
		for i := range sets {
			if sets[i].fields == f {
				sets[i].entities = append(sets[i].entities, e)
				return
			}
		}
		sets = append(sets, watchSet{entities: []entity{e}, fields: f})
	}
	for i := range s.gpus {
		g := &s.gpus[i]
		hasMIG := slices.ContainsFunc(s.units, func(u unit) bool { return u.MIG && u.GPU == g.ID })
		if hasMIG {
			add(entity{entityGPU, g.ID}, requested&wholeGPUFields)
			continue
		}
		f := device | requested&g.Prof
		for _, c := range []column{colPCIeTx, colPCIeRx} {
			prof, legacy := columnSpecs[c][0], columnSpecs[c][1]
			if requested.has(prof) && !g.Prof.has(prof) {
				f.add(legacy)
			}
		}
		add(entity{entityGPU, g.ID}, f)
	}
	for _, u := range s.units {
		if u.MIG {
			g := s.gpuByID(u.GPU)
			add(u.Self, requested&migSpecs&^(profSpecs&^g.Prof))
		}
	}
	return sets
}

// startWatches starts each watch set, retrying a failed one without the fields an
// older host engine may not know, then without profiling fields. It returns the
// fields actually watched per entity.
func (s *Source) startWatches(sets []watchSet) (map[entity]specSet, error) {
	watched := map[entity]specSet{}
	var errs []error
	for _, ws := range sets {
		tried := map[specSet]bool{}
		for _, f := range []specSet{ws.fields, ws.fields &^ optionalSpecs, ws.fields &^ optionalSpecs &^ profSpecs} {
			if f == 0 || tried[f] {
				continue
			}
			tried[f] = true
			id, err := s.eng.Watch(ws.entities, f.ids(), s.cfg.UpdateInterval, s.cfg.MaxKeepAge)
			if err != nil {
				s.log.Warn("dcgm watch failed; retrying with fewer fields", "entities", entityList(ws.entities), "fields", f.ids(), "err", err)
				errs = append(errs, err)
				continue
			}
			ws.id, ws.fields = id, f
			s.watches = append(s.watches, ws)
			for _, e := range ws.entities {
				watched[e] = f
			}
			break
		}
	}
	if len(s.watches) == 0 {
		return nil, fmt.Errorf("dcgm: watch fields: %w", errors.Join(errs...))
	}
	return watched, nil
}

func entityList(es []entity) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, ",")
}

// startSideWatches starts per-process statistics and health watches; a node
// without them is still sampled.
func (s *Source) startSideWatches() {
	ids := make([]uint32, len(s.gpus))
	for i, g := range s.gpus {
		ids[i] = g.ID
	}
	if s.procs != nil {
		if err := s.eng.WatchPIDs(ids, s.cfg.UpdateInterval, s.cfg.MaxKeepAge); err != nil {
			s.log.Warn("DCGM per-process statistics unavailable; process rows keep the lister's values", "err", err)
		} else {
			s.pidsOn = true
		}
	}
	if err := s.eng.WatchHealth(ids, watchedHealth); err != nil {
		s.log.Warn("DCGM health watches unavailable; no health incidents will be reported", "err", err)
	} else {
		s.healthOn = true
	}
}

// initGauges sets gpupool_collector_dcgm_field_supported for every row and column
// from what is watched; sampling lowers it when DCGM answers NOT_SUPPORTED.
func (s *Source) initGauges(watched map[entity]specSet) {
	for i := range s.units {
		u := &s.units[i]
		own, whole := watched[u.Self], watched[entity{entityGPU, u.GPU}]
		for c := colNone + 1; c < numColumns; c++ {
			f := own
			if u.MIG && wholeGPUFields&specsOf(c) != 0 {
				f = whole
			}
			on := f&specsOf(c) != 0
			if u.MIG && (c == colGPUUtil || c == colPCIeTx || c == colPCIeRx) {
				on = false
			}
			u.gauges[c] = s.m.fieldSupported.WithLabelValues(u.UUID, c.String())
			u.supported[c] = -1
			s.setSupported(u, c, on)
		}
	}
}

func specsOf(c column) specSet {
	var f specSet
	for _, i := range columnSpecs[c] {
		f.add(i)
	}
	return f
}

func (s *Source) setSupported(u *unit, c column, on bool) {
	v := int8(0)
	if on {
		v = 1
	}
	if u.supported[c] != v {
		u.supported[c] = v
		u.gauges[c].Set(float64(v))
	}
}

// publishStates updates the field_supported gauges from one mapping: a reading
// says supported, NOT_SUPPORTED / NOT_PERMISSIONED say not; blank, stale and failed
// reads change nothing (unwatched columns were set to 0 by initGauges).
func (s *Source) publishStates(u *unit, st *columnStates) {
	for c := colNone + 1; c < numColumns; c++ {
		switch st[c] {
		case readingOK:
			s.setSupported(u, c, true)
		case readingUnsupported, readingNoPermission:
			s.setSupported(u, c, false)
		}
	}
}
