package dcgm

import (
	"fmt"
	"time"
)

// Events: XID errors and DCGM health incidents.
//
// Design: events go to a handler set with WithEventHandler, called by Sample after
// it has filled the batch, on Sample's goroutine and outside the source's lock, in
// the order they were found. A handler must return quickly and must not call the
// source's methods. Without a handler events are logged at Warn. Every event is
// counted in gpupool_collector_dcgm_events_total{kind,system}.

// EventKind says what an Event reports.
type EventKind string

const (
	// EventXID is an XID error reported by the driver (DCGM_FI_DEV_XID_ERROR).
	EventXID EventKind = "xid"
	// EventHealth is a new DCGM health incident (dcgmHealthCheck).
	EventHealth EventKind = "health"
)

// Event is something that happened to a GPU between two samples.
type Event struct {
	// Time is when DCGM saw an XID, or the sample time a health incident was found.
	Time time.Time
	Kind EventKind
	// GPUUUID is the physical GPU (an XID, or a GPU-level incident) or the MIG
	// instance ("MIG-…") the event concerns; GPUIndex its GPU's NVML index.
	GPUUUID  string
	GPUIndex uint32
	// XID is the XID error code (EventXID).
	XID uint32
	// System is the health watch that raised the incident: "pcie", "memory",
	// "thermal", "power", "nvlink", … (EventHealth).
	System string
	// Severity is "warning" or "failure" (EventHealth).
	Severity string
	// Code is DCGM's health error code (dcgmError_t, DCGM_FR_*) (EventHealth).
	Code uint32
	// Message is DCGM's description of the incident (EventHealth).
	Message string
}

// xidTracker reports each XID once. DCGM_FI_DEV_XID_ERROR holds the last XID the
// GPU had, with the time it happened, for as long as DCGM keeps it; an XID is new
// when its time is later than the last one reported. XIDs older than the source
// are history and not reported. XIDs that come faster than the update interval
// are seen as the last of them.
type xidTracker struct {
	startMicros int64
	last        map[uint32]int64
}

func newXIDTracker(start time.Time) xidTracker {
	return xidTracker{startMicros: start.UnixMicro(), last: map[uint32]int64{}}
}

// observe returns a GPU's new XID and when it happened, if its readings hold one.
func (t *xidTracker) observe(gpu uint32, r *readings) (uint32, int64, bool) {
	i, _ := specIndex(fidXID)
	if !r.have.has(i) {
		return 0, 0, false
	}
	v := r.vals[i]
	n, rd := number(v, &fieldSpecs[i])
	if rd != readingOK || n == 0 || n > 1<<31 {
		return 0, 0, false
	}
	last, seen := t.last[gpu]
	if v.TSMicros <= last {
		return 0, 0, false
	}
	t.last[gpu] = v.TSMicros
	if !seen && v.TSMicros < t.startMicros {
		return 0, 0, false
	}
	return uint32(n), v.TSMicros, true
}

// healthTracker turns DCGM's list of current incidents into new ones: an incident
// is reported when it appears, not again while it persists, and again if it
// clears and comes back.
type healthTracker struct {
	active map[incidentKey]bool
	next   map[incidentKey]bool
}

type incidentKey struct {
	Entity entity
	System healthSystem
	Code   uint32
}

func newHealthTracker() healthTracker {
	return healthTracker{active: map[incidentKey]bool{}, next: map[incidentKey]bool{}}
}

// update returns the incidents that were not active at the previous check.
func (t *healthTracker) update(incs []incident) []incident {
	var fresh []incident
	clear(t.next)
	for _, in := range incs {
		if in.Health != healthResultWarn && in.Health != healthResultFail {
			continue
		}
		k := incidentKey{in.Entity, in.System, in.Code}
		if t.next[k] {
			continue
		}
		t.next[k] = true
		if !t.active[k] {
			fresh = append(fresh, in)
		}
	}
	t.active, t.next = t.next, t.active
	return fresh
}

var healthSystemNames = map[healthSystem]string{
	healthPCIe: "pcie", healthNVLink: "nvlink", healthPMU: "pmu", healthMCU: "mcu",
	healthMem: "memory", healthSM: "sm", healthInforom: "inforom", healthThermal: "thermal",
	healthPower: "power", healthDriver: "driver",
}

func (h healthSystem) String() string {
	if n, ok := healthSystemNames[h]; ok {
		return n
	}
	return fmt.Sprintf("system_%#x", uint32(h))
}

func (r healthResult) String() string {
	switch r {
	case healthResultPass:
		return "pass"
	case healthResultWarn:
		return "warning"
	case healthResultFail:
		return "failure"
	}
	return fmt.Sprintf("result_%d", uint32(r))
}

// xidEvents finds the tick's new XIDs, records them on the GPUs, and returns them
// as events.
func (s *Source) xidEvents() []Event {
	var events []Event
	for i := range s.gpus {
		g := &s.gpus[i]
		code, ts, ok := s.xid.observe(g.ID, &s.table[g.slot])
		g.xid = 0
		if !ok {
			continue
		}
		g.xid = code
		events = append(events, Event{
			Time: time.UnixMicro(ts).UTC(), Kind: EventXID, GPUUUID: g.UUID, GPUIndex: g.Index, XID: code,
		})
		s.m.events.WithLabelValues(string(EventXID), "").Inc()
	}
	return events
}

// healthEvents runs DCGM's health check and returns the new incidents as events.
func (s *Source) healthEvents(at time.Time) []Event {
	incs, err := s.eng.CheckHealth()
	if err != nil {
		s.m.errors.WithLabelValues("health").Inc()
		s.log.Warn("DCGM health check failed", "err", err)
		return nil
	}
	var events []Event
	for _, in := range s.health.update(incs) {
		uuid, index := s.names[in.Entity], uint32(0)
		if g := s.gpuOfEntity(in.Entity); g != nil {
			index = g.Index
			if uuid == "" {
				uuid = g.UUID
			}
		}
		e := Event{
			Time: at, Kind: EventHealth, GPUUUID: uuid, GPUIndex: index,
			System: in.System.String(), Severity: in.Health.String(), Code: in.Code, Message: in.Message,
		}
		events = append(events, e)
		s.m.events.WithLabelValues(string(EventHealth), e.System).Inc()
	}
	return events
}

// gpuOfEntity returns the physical GPU of an entity.
func (s *Source) gpuOfEntity(e entity) *gpuInfo {
	if e.Kind == entityGPU {
		return s.gpuByID(e.ID)
	}
	for i := range s.units {
		if s.units[i].Self == e || s.names[e] != "" && s.names[e] == s.units[i].UUID {
			return s.gpuByID(s.units[i].GPU)
		}
	}
	return nil
}
