package nvml

import "math"

// XID errors through an NVML event set.
//
// Design: one event set for the source, created at the first Sample; each
// physical GPU registers nvmlEventTypeXidCriticalError with it once its device
// handle is known, if nvmlDeviceGetSupportedEventTypes says it can (a GPU that
// cannot is skipped with one log line and named in
// gpupool_nvml_field_unsupported{field="xid"}). Each Sample drains the set with
// Wait(0) after reading the GPUs, and a GPU's XIDs go on its rows of that sample
// (the whole GPU's and its MIG instances', as the DCGM source does); the next
// sample has XID 0 again unless a new one came. So schemas.GPUSample.XID means
// the same for both sources: the XID the GPU had since the previous sample, 0 for
// none.
//
// Why a non-blocking drain per tick and not a goroutine blocked in Wait: the
// driver keeps each XID event queued for the set until it is read ("on Linux,
// every Xid error event would return the associated event data", nvml.h), so a
// sample loses nothing by reading them at its own time; Wait(0) returns at once
// when the queue is empty (ERROR_TIMEOUT, the normal answer), so sampling never
// waits; every call on the set happens under the source's lock, so no Wait can
// run while Close frees the set, and there is no goroutine to stop. The cost is
// the XID's time: it is dated by the sample that carries it (at most one
// interval late), as DCGM's XID field is. Processes (the DCGM source's PID
// lister) does not drain, so that it never takes XIDs DCGM reports itself.

// maxEventsPerTick bounds one drain, so that an XID storm cannot hold a sample
// up; the rest stays queued for the next tick.
const maxEventsPerTick = 256

// xidState is the source's event set and what it has found out about it.
type xidState struct {
	set eventSet
	// tried is whether creating the set was attempted (it is tried once).
	tried bool
	// warned is whether a failed Wait was logged.
	warned bool
}

// xidGPU is what one GPU's state keeps about XIDs.
type xidGPU struct {
	// registered: its XIDs are recorded in the set; skipped: it cannot report
	// them (or registering failed for good), so it is not asked again.
	registered, skipped bool
	// pending is the last XID drained for the GPU that no sample carried yet
	// (the GPU was lost at that tick), 0 for none.
	pending uint32
}

// openEvents creates the event set, once. Without it no GPU reports XIDs; the
// reason is logged.
func (s *Source) openEvents() {
	if s.xid.tried {
		return
	}
	s.xid.tried = true
	set, st := s.lib.EventSetCreate()
	switch {
	case st == success:
		s.xid.set = set
	case st.unsupported():
		s.log.Info("XIDs not read: the driver has no NVML event sets", "nvml", st.Error())
	default:
		s.metrics.callErrors.WithLabelValues("EventSetCreate", st.Error()).Inc()
		s.log.Warn("XIDs not read: creating an NVML event set failed", "nvml", st.Error())
	}
}

// registerXID registers a GPU's XID events with the set, once its handle and
// UUID are known. A lost GPU, or one failing for another reason, is tried again
// next tick.
func (s *Source) registerXID(g *gpuState) {
	if s.xid.set == nil || g.xidGPU.registered || g.xidGPU.skipped || g.dev == nil || g.uuid == "" || g.lostNow {
		return
	}
	types, st := g.dev.SupportedEventTypes()
	if st == success && types&eventTypeXIDCritical == 0 {
		st = errNotSupported
	}
	if st == success {
		st = g.dev.RegisterEvents(eventTypeXIDCritical, s.xid.set)
	}
	switch {
	case st == success:
		g.xidGPU.registered = true
	case st.unsupported():
		g.xidGPU.skipped = true
		s.metrics.unsupported.WithLabelValues(g.uuid, fieldXID.String()).Set(1)
		s.log.Info("GPU cannot report XIDs through NVML events: its samples carry XID 0", "gpu_index", g.index, "gpu_uuid", g.uuid, "nvml", st.Error())
	default:
		s.metrics.callErrors.WithLabelValues("RegisterEvents", st.Error()).Inc()
		if !g.warned["RegisterEvents"] {
			g.warned["RegisterEvents"] = true
			s.log.Warn("NVML call failed", "function", "RegisterEvents", "gpu_index", g.index, "gpu_uuid", g.uuid, "nvml", st.Error())
		}
	}
}

// drainXIDs reads the XIDs queued in the set without waiting and records each on
// its GPU's state (the last one wins, as in DCGM's XID field). It logs each XID
// at Warn and counts it.
func (s *Source) drainXIDs(gpus []*gpuState) {
	if s.xid.set == nil {
		return
	}
	for range maxEventsPerTick {
		ev, st := s.xid.set.Wait(0)
		if st == errTimeout {
			return // nothing (more) queued
		}
		if st != success {
			s.metrics.callErrors.WithLabelValues("EventSetWait", st.Error()).Inc()
			if !s.xid.warned {
				s.xid.warned = true
				s.log.Warn("NVML call failed", "function", "EventSetWait", "nvml", st.Error())
			}
			return
		}
		if ev.Type&eventTypeXIDCritical == 0 {
			continue
		}
		if ev.Data == 0 || ev.Data > math.MaxUint32 {
			continue // not an XID code
		}
		code := uint32(ev.Data)
		g := s.eventGPU(gpus, ev.Device)
		if g == nil {
			s.metrics.xids.WithLabelValues("").Inc()
			s.log.Warn("XID on a GPU not sampled", "xid", code)
			continue
		}
		g.xidGPU.pending = code
		s.metrics.xids.WithLabelValues(g.uuid).Inc()
		s.log.Warn("GPU event", "kind", "xid", "gpu_uuid", g.uuid, "gpu_index", g.index, "xid", code,
			"gpu_instance", ev.GPUInstanceID, "compute_instance", ev.ComputeInstanceID)
	}
}

// eventGPU is the GPU an event's device handle names: the GPU with the same
// handle (NVML's handles are stable while it is initialised), else the one
// with the same UUID.
func (s *Source) eventGPU(gpus []*gpuState, d device) *gpuState {
	if d == nil {
		return nil
	}
	for _, g := range gpus {
		if g.dev == d {
			return g
		}
	}
	uuid, st := d.UUID()
	if st != success {
		s.metrics.callErrors.WithLabelValues("UUID", st.Error()).Inc()
		return nil
	}
	for _, g := range gpus {
		if g.uuid == uuid {
			return g
		}
	}
	return nil
}

// closeEvents frees the set; Close calls it before nvmlShutdown.
func (s *Source) closeEvents() error {
	if s.xid.set == nil {
		return nil
	}
	st := s.xid.set.Free()
	s.xid.set = nil
	if st != success {
		return st
	}
	return nil
}
