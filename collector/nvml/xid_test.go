package nvml

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// xidSource is a source over the three L40S of testdata/lost.json, all healthy
// (the XID and lost-GPU tests start from it).
func xidSource(t *testing.T) (*Source, *fixture, *Metrics, *bytes.Buffer, func() schemas.SampleBatch) {
	t.Helper()
	f, root := loadFixture(t, "lost")
	f.Devices[1].Errors = nil
	s, m, logs := newTestSource(t, f, root)
	tick := func() schemas.SampleBatch {
		t.Helper()
		var b schemas.SampleBatch
		if err := s.Sample(t.Context(), f.At, &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	return s, f, m, logs, tick
}

// xids is each GPU row's XID, by UUID.
func xids(b schemas.SampleBatch) map[string]uint32 {
	out := map[string]uint32{}
	for _, g := range b.GPUs {
		out[g.GPUUUID] = g.XID
	}
	return out
}

func theSet(t *testing.T, s *Source) *fakeEventSet {
	t.Helper()
	lib := s.lib.(*fakeLibrary)
	if len(lib.sets) != 1 {
		t.Fatalf("%d event sets created, want 1", len(lib.sets))
	}
	return lib.sets[0]
}

// TestXIDOnItsGPU: an XID on GPU 1 is on GPU 1's next sample and on no other
// GPU's, and only on that sample; of two XIDs between samples the later is kept,
// as in DCGM's XID field. An empty set (ERROR_TIMEOUT) is no error.
func TestXIDOnItsGPU(t *testing.T) {
	s, f, m, _, tick := xidSource(t)
	uuid := func(i int) string { return f.Devices[i].UUIDValue }
	for u, x := range xids(tick()) {
		if x != 0 {
			t.Errorf("first sample: %s XID %d, want 0", u, x)
		}
	}
	set := theSet(t, s)
	for i, d := range f.Devices {
		if set.registered[d] != eventTypeXIDCritical {
			t.Errorf("GPU %d registered for %#x, want the XID type only", i, set.registered[d])
		}
	}
	set.xid(f.Devices[1], 31)
	got := xids(tick())
	if got[uuid(1)] != 31 || got[uuid(0)] != 0 || got[uuid(2)] != 0 {
		t.Errorf("after an XID 31 on GPU 1: %v", got)
	}
	for u, x := range xids(tick()) {
		if x != 0 {
			t.Errorf("the sample after: %s XID %d, want 0", u, x)
		}
	}
	set.xid(f.Devices[1], 13)
	set.xid(f.Devices[1], 79)
	set.xid(f.Devices[2], 48)
	got = xids(tick())
	if got[uuid(1)] != 79 || got[uuid(2)] != 48 || got[uuid(0)] != 0 {
		t.Errorf("after XIDs 13 and 79 on GPU 1 and 48 on GPU 2: %v", got)
	}
	if v := value(t, m.xids.WithLabelValues(uuid(1))); v != 3 {
		t.Errorf("GPU 1 XIDs counted = %v, want 3", v)
	}
	if n := series(m.callErrors); n != 0 {
		t.Errorf("%d call error series: ERROR_TIMEOUT from an empty set counted as an error", n)
	}
	if set.waits < 4 {
		t.Errorf("%d waits in 4 ticks", set.waits)
	}
}

// TestXIDUnsupportedDevice: a GPU whose supported event types lack XIDs is not
// registered, is said so once in the log and in gpupool_nvml_field_unsupported,
// and is not asked again; the other GPUs still report theirs.
func TestXIDUnsupportedDevice(t *testing.T) {
	f, root := loadFixture(t, "lost")
	f.Devices[1].Errors = nil
	f.Devices[2].SupportedEvents = 1 | 2 // ECC events, no XIDs
	s, m, logs := newTestSource(t, f, root)
	var b schemas.SampleBatch
	for range 3 {
		b.Reset()
		if err := s.Sample(t.Context(), f.At, &b); err != nil {
			t.Fatal(err)
		}
	}
	set := theSet(t, s)
	if _, ok := set.registered[f.Devices[2]]; ok || f.Devices[2].called("RegisterEvents") != 0 {
		t.Error("GPU 2 registered for XIDs it cannot report")
	}
	if n := f.Devices[2].called("SupportedEventTypes"); n != 1 {
		t.Errorf("GPU 2 asked for its event types %d times, want 1", n)
	}
	if n := strings.Count(logs.String(), "cannot report XIDs"); n != 1 {
		t.Errorf("%d log lines for the GPU without XIDs, want 1:\n%s", n, logs)
	}
	if v := value(t, m.unsupported.WithLabelValues(f.Devices[2].UUIDValue, "xid")); v != 1 {
		t.Errorf("xid unsupported = %v, want 1", v)
	}
	set.xid(f.Devices[0], 94)
	b.Reset()
	if err := s.Sample(t.Context(), f.At, &b); err != nil {
		t.Fatal(err)
	}
	if got := xids(b); got[f.Devices[0].UUIDValue] != 94 {
		t.Errorf("GPU 0's XID not read beside an unsupported GPU: %v", got)
	}
}

// TestXIDCloseFreesSet: Close frees the event set, before nvmlShutdown, once.
func TestXIDCloseFreesSet(t *testing.T) {
	s, _, _, _, tick := xidSource(t)
	tick()
	set := theSet(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !set.freed || set.frees != 1 {
		t.Errorf("set freed %v, %d Free calls, want once", set.freed, set.frees)
	}
	if set.shutdownAtFree != 0 || s.lib.(*fakeLibrary).shutdown != 1 {
		t.Errorf("freed after %d shutdowns; %d shutdowns in all", set.shutdownAtFree, s.lib.(*fakeLibrary).shutdown)
	}
}

// TestXIDWaitFails: a Wait failing for another reason than ERROR_TIMEOUT is
// counted and logged once, and the samples go on.
func TestXIDWaitFails(t *testing.T) {
	s, _, m, logs, tick := xidSource(t)
	tick()
	theSet(t, s).waitErr = errUnknown
	for range 3 {
		if b := tick(); len(b.GPUs) != 3 {
			t.Fatalf("%d GPU rows, want 3", len(b.GPUs))
		}
	}
	if v := value(t, m.callErrors.WithLabelValues("EventSetWait", "ERROR_UNKNOWN")); v != 3 {
		t.Errorf("failed waits counted = %v, want 3", v)
	}
	if n := strings.Count(logs.String(), "function=EventSetWait"); n != 1 {
		t.Errorf("%d log lines for the failed waits, want 1:\n%s", n, logs)
	}
}

// TestXIDOnLostGPU: the XID drained while its GPU is lost (79: fallen off the
// bus) is carried by the GPU's first sample once it answers again.
func TestXIDOnLostGPU(t *testing.T) {
	s, f, _, _, tick := xidSource(t)
	tick()
	set := theSet(t, s)
	set.xid(f.Devices[1], 79)
	f.Devices[1].Errors = map[string]string{"*": "ERROR_GPU_IS_LOST"}
	if b := tick(); len(b.GPUs) != 2 {
		t.Fatalf("lost: %d GPU rows, want 2", len(b.GPUs))
	}
	f.Devices[1].Errors = nil
	if got := xids(tick()); got[f.Devices[1].UUIDValue] != 79 {
		t.Errorf("GPU 1 answers again: XIDs %v, want 79 on it", got)
	}
	if got := xids(tick()); got[f.Devices[1].UUIDValue] != 0 {
		t.Errorf("XID carried twice: %v", got)
	}
}

// TestXIDNotTakenByProcesses: Processes, which the DCGM source calls to list
// PIDs, neither creates the set nor drains it.
func TestXIDNotTakenByProcesses(t *testing.T) {
	s, f, _, _, tick := xidSource(t)
	if _, err := s.Processes(t.Context(), f.At); err != nil {
		t.Fatal(err)
	}
	if n := len(s.lib.(*fakeLibrary).sets); n != 0 {
		t.Fatalf("Processes created %d event sets", n)
	}
	tick()
	set := theSet(t, s)
	set.xid(f.Devices[0], 43)
	if _, err := s.Processes(t.Context(), f.At); err != nil {
		t.Fatal(err)
	}
	if got := xids(tick()); got[f.Devices[0].UUIDValue] != 43 {
		t.Errorf("XID lost to Processes: %v", got)
	}
}

// TestXIDNoEventSets: a driver without event sets gives samples with XID 0 and
// says why once.
func TestXIDNoEventSets(t *testing.T) {
	f, root := loadFixture(t, "h100")
	s, _, logs := newTestSource(t, f, root)
	s.lib.(*fakeLibrary).createErr = errFunctionNotFound
	for range 2 {
		var b schemas.SampleBatch
		if err := s.Sample(t.Context(), f.At, &b); err != nil || len(b.GPUs) != 1 || b.GPUs[0].XID != 0 {
			t.Fatalf("sample without event sets: %v, %+v", err, b.GPUs)
		}
	}
	if s.xid.set != nil || !s.xid.tried {
		t.Error("event set state after a failed create")
	}
	if n := strings.Count(logs.String(), "no NVML event sets"); n != 1 {
		t.Errorf("%d log lines for a driver without event sets, want 1:\n%s", n, logs)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close without a set: %v", err)
	}
}

// TestXIDOnMIGInstances: an XID on a MIG-enabled GPU (NVML reports it on the
// physical GPU) is on every instance's row, as the DCGM source puts it.
func TestXIDOnMIGInstances(t *testing.T) {
	f, root := loadFixture(t, "a100_mig")
	s, _, _ := newTestSource(t, f, root)
	var b schemas.SampleBatch
	if err := s.Sample(t.Context(), f.At, &b); err != nil {
		t.Fatal(err)
	}
	theSet(t, s).xid(f.Devices[0], 94)
	b.Reset()
	if err := s.Sample(t.Context(), f.At, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.GPUs) != 3 {
		t.Fatalf("%d rows, want 3 instances", len(b.GPUs))
	}
	for _, g := range b.GPUs {
		if g.XID != 94 {
			t.Errorf("%s (%s): XID %d, want 94", g.GPUUUID, g.MIGProfile, g.XID)
		}
	}
}
