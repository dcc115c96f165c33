package nvml

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fixture is a node's NVML answers at one moment, as JSON in testdata/: what each
// device function returned, or the NVML return code it failed with. recordFixture
// writes one from a real library (go test -run TestRealGPU -record FILE).
type fixture struct {
	Comment string `json:"comment,omitempty"`
	// At is when the values were read; tests sample at this time.
	At time.Time `json:"at"`
	// DriverVersion is nvmlSystemGetDriverVersion's answer ("": it failed).
	DriverVersion string        `json:"driver_version,omitempty"`
	Devices       []*fakeDevice `json:"devices"`
	// Comm is /proc/<pid>/comm by PID; loadFixture writes it under a temporary
	// proc root.
	Comm map[string]string `json:"comm,omitempty"`
}

// fakeDevice is a device answering with recorded values. Errors maps a function
// name (a device method, or "DeviceByIndex") to the NVML code it fails with; "*"
// applies to every function without its own entry.
type fakeDevice struct {
	UUIDValue          string              `json:"uuid"`
	NameValue          string              `json:"name,omitempty"`
	Memory             memoryInfo          `json:"memory"`
	Utilization        utilization         `json:"utilization"`
	PowerMW            uint32              `json:"power_mw,omitempty"`
	EnergyMilliJ       uint64              `json:"energy_mj,omitempty"`
	TempC              uint32              `json:"temperature_c,omitempty"`
	PCIeTxKBs          uint32              `json:"pcie_tx_kb_s,omitempty"`
	PCIeRxKBs          uint32              `json:"pcie_rx_kb_s,omitempty"`
	ClocksEventReasons uint64              `json:"clocks_event_reasons,omitempty"`
	ECCCorrected       uint64              `json:"ecc_corrected_volatile,omitempty"`
	ECCUncorrected     uint64              `json:"ecc_uncorrected_volatile,omitempty"`
	MIGMode            [2]int              `json:"mig_mode"`
	MaxMIGDevices      int                 `json:"max_mig_devices,omitempty"`
	MIGDevices         []*fakeDevice       `json:"mig_devices,omitempty"`
	Attrs              attributes          `json:"attributes"`
	Compute            []processInfo       `json:"compute_processes,omitempty"`
	Graphics           []processInfo       `json:"graphics_processes,omitempty"`
	ProcessUtil        []processUtilSample `json:"process_utilization,omitempty"`
	// SupportedEvents is nvmlDeviceGetSupportedEventTypes' mask (8: XIDs).
	SupportedEvents uint64            `json:"supported_event_types,omitempty"`
	Errors          map[string]string `json:"errors,omitempty"`

	mu    sync.Mutex
	calls map[string]int
}

var _ device = (*fakeDevice)(nil)

// fail returns the recorded code of fn and counts the call.
func (d *fakeDevice) fail(fn string) status {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.calls == nil {
		d.calls = make(map[string]int)
	}
	d.calls[fn]++
	name, ok := d.Errors[fn]
	if !ok {
		name, ok = d.Errors["*"]
	}
	if !ok {
		return success
	}
	st, known := parseStatus(name)
	if !known {
		panic(fmt.Sprintf("fixture: %s: unknown NVML code %q", fn, name))
	}
	return st
}

// called is how often fn was called.
func (d *fakeDevice) called(fn string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[fn]
}

func (d *fakeDevice) UUID() (string, status) {
	if st := d.fail("UUID"); st != success {
		return "", st
	}
	return d.UUIDValue, success
}

func (d *fakeDevice) Name() (string, status) {
	if st := d.fail("Name"); st != success {
		return "", st
	}
	return d.NameValue, success
}

func (d *fakeDevice) MemoryInfo() (memoryInfo, status) {
	if st := d.fail("MemoryInfo"); st != success {
		return memoryInfo{}, st
	}
	return d.Memory, success
}

func (d *fakeDevice) UtilizationRates() (utilization, status) {
	if st := d.fail("UtilizationRates"); st != success {
		return utilization{}, st
	}
	return d.Utilization, success
}

func (d *fakeDevice) PowerUsage() (uint32, status) {
	if st := d.fail("PowerUsage"); st != success {
		return 0, st
	}
	return d.PowerMW, success
}

func (d *fakeDevice) TotalEnergyConsumption() (uint64, status) {
	if st := d.fail("TotalEnergyConsumption"); st != success {
		return 0, st
	}
	return d.EnergyMilliJ, success
}

func (d *fakeDevice) TotalEccErrors(uncorrected bool) (uint64, status) {
	if st := d.fail("TotalEccErrors"); st != success {
		return 0, st
	}
	if uncorrected {
		return d.ECCUncorrected, success
	}
	return d.ECCCorrected, success
}

func (d *fakeDevice) Temperature() (uint32, status) {
	if st := d.fail("Temperature"); st != success {
		return 0, st
	}
	return d.TempC, success
}

func (d *fakeDevice) PcieThroughput(c pcieCounter) (uint32, status) {
	if st := d.fail("PcieThroughput"); st != success {
		return 0, st
	}
	if c == pcieRx {
		return d.PCIeRxKBs, success
	}
	return d.PCIeTxKBs, success
}

func (d *fakeDevice) CurrentClocksEventReasons() (uint64, status) {
	if st := d.fail("CurrentClocksEventReasons"); st != success {
		return 0, st
	}
	return d.ClocksEventReasons, success
}

func (d *fakeDevice) ComputeRunningProcesses(dst []processInfo) ([]processInfo, status) {
	if st := d.fail("ComputeRunningProcesses"); st != success {
		return dst[:0], st
	}
	return append(dst[:0], d.Compute...), success
}

func (d *fakeDevice) GraphicsRunningProcesses(dst []processInfo) ([]processInfo, status) {
	if st := d.fail("GraphicsRunningProcesses"); st != success {
		return dst[:0], st
	}
	return append(dst[:0], d.Graphics...), success
}

// ProcessUtilization answers like NVML: the samples newer than sinceMicros, or
// ERROR_NOT_FOUND when there are none.
func (d *fakeDevice) ProcessUtilization(dst []processUtilSample, sinceMicros uint64) ([]processUtilSample, status) {
	dst = dst[:0]
	if st := d.fail("ProcessUtilization"); st != success {
		return dst, st
	}
	for _, u := range d.ProcessUtil {
		if u.TimeStamp > sinceMicros {
			dst = append(dst, u)
		}
	}
	if len(dst) == 0 {
		return dst, errNotFound
	}
	return dst, success
}

func (d *fakeDevice) MigMode() (int, int, status) {
	if st := d.fail("MigMode"); st != success {
		return 0, 0, st
	}
	return d.MIGMode[0], d.MIGMode[1], success
}

func (d *fakeDevice) MaxMigDeviceCount() (int, status) {
	if st := d.fail("MaxMigDeviceCount"); st != success {
		return 0, st
	}
	return d.MaxMIGDevices, success
}

func (d *fakeDevice) MigDeviceByIndex(i int) (device, status) {
	if st := d.fail("MigDeviceByIndex"); st != success {
		return nil, st
	}
	if i >= len(d.MIGDevices) || d.MIGDevices[i] == nil {
		return nil, errNotFound
	}
	return d.MIGDevices[i], success
}

func (d *fakeDevice) Attributes() (attributes, status) {
	if st := d.fail("Attributes"); st != success {
		return attributes{}, st
	}
	return d.Attrs, success
}

func (d *fakeDevice) SupportedEventTypes() (uint64, status) {
	if st := d.fail("SupportedEventTypes"); st != success {
		return 0, st
	}
	return d.SupportedEvents, success
}

// RegisterEvents registers d with a fakeEventSet, like NVML: only the types the
// device supports.
func (d *fakeDevice) RegisterEvents(types uint64, set eventSet) status {
	if st := d.fail("RegisterEvents"); st != success {
		return st
	}
	fs, ok := set.(*fakeEventSet)
	if !ok || fs.freed {
		return errInvalidArgument
	}
	if types&^d.SupportedEvents != 0 {
		return errNotSupported
	}
	fs.registered[d] |= types
	return success
}

// fakeEventSet is an event set whose events a test queues with push; Wait hands
// out those of registered devices and types, oldest first.
type fakeEventSet struct {
	mu         sync.Mutex
	registered map[device]uint64
	queue      []event
	waitErr    status
	waits      int
	freed      bool
	frees      int
	// lib made the set; shutdownAtFree is how often lib was shut down when the
	// set was freed (it must be freed first).
	lib            *fakeLibrary
	shutdownAtFree int
}

// push queues an event, as the driver would when it happens; an event of a
// device or type not registered is dropped, as NVML records only those.
func (e *fakeEventSet) push(ev event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.registered[ev.Device]&ev.Type != 0 {
		e.queue = append(e.queue, ev)
	}
}

// xid queues XID code on d.
func (e *fakeEventSet) xid(d *fakeDevice, code uint64) {
	e.push(event{Device: d, Type: eventTypeXIDCritical, Data: code})
}

func (e *fakeEventSet) Wait(timeoutMs uint32) (event, status) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waits++
	switch {
	case e.freed:
		return event{}, errInvalidArgument
	case e.waitErr != success:
		return event{}, e.waitErr
	case len(e.queue) == 0:
		return event{}, errTimeout
	}
	ev := e.queue[0]
	e.queue = e.queue[1:]
	return ev, success
}

func (e *fakeEventSet) Free() status {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.frees++
	if e.freed {
		return errInvalidArgument
	}
	e.freed = true
	e.shutdownAtFree = e.lib.shutdown
	return success
}

// fakeLibrary is a library of fake devices.
type fakeLibrary struct {
	devices       []*fakeDevice
	driverVersion string
	countErr      status
	shutdown      int
	// createErr is what EventSetCreate fails with; sets are the sets it made.
	createErr status
	sets      []*fakeEventSet
}

func (l *fakeLibrary) EventSetCreate() (eventSet, status) {
	if l.createErr != success {
		return nil, l.createErr
	}
	s := &fakeEventSet{registered: map[device]uint64{}, lib: l}
	l.sets = append(l.sets, s)
	return s, success
}

var _ library = (*fakeLibrary)(nil)

func (l *fakeLibrary) DeviceCount() (int, status) {
	if l.countErr != success {
		return 0, l.countErr
	}
	return len(l.devices), success
}

func (l *fakeLibrary) DeviceByIndex(i int) (device, status) {
	if i >= len(l.devices) {
		return nil, errNotFound
	}
	d := l.devices[i]
	if st := d.fail("DeviceByIndex"); st != success {
		return nil, st
	}
	return d, success
}

func (l *fakeLibrary) Shutdown() status { l.shutdown++; return success }

func (l *fakeLibrary) DriverVersion() (string, status) {
	if l.driverVersion == "" {
		return "", errNotSupported
	}
	return l.driverVersion, success
}

// loadFixture reads testdata/<name>.json and writes its comm entries under a
// temporary proc root, which it returns.
func loadFixture(t testing.TB, name string) (*fixture, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := f.check(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &f, writeComm(t, f.Comm)
}

// check rejects unknown NVML codes, so that a typo fails loudly.
func (f *fixture) check() error {
	var walk func(ds []*fakeDevice) error
	walk = func(ds []*fakeDevice) error {
		for _, d := range ds {
			if d == nil {
				continue
			}
			for fn, name := range d.Errors {
				if _, ok := parseStatus(name); !ok {
					return fmt.Errorf("device %s: %s: unknown NVML code %q", d.UUIDValue, fn, name)
				}
			}
			if err := walk(d.MIGDevices); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(f.Devices)
}

func writeComm(t testing.TB, comm map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, name := range comm {
		dir := filepath.Join(root, pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func (f *fixture) library() *fakeLibrary {
	return &fakeLibrary{devices: f.Devices, driverVersion: f.DriverVersion}
}

// recordFixture reads every value the source uses from lib, as a fixture. It
// records process utilisation for the window before at, and process names from
// procRoot.
func recordFixture(lib library, at time.Time, window time.Duration, procRoot string) (*fixture, error) {
	n, st := lib.DeviceCount()
	if st != success {
		return nil, fmt.Errorf("device count: %w", st)
	}
	f := &fixture{At: at, Comm: map[string]string{}}
	if v, st := lib.DriverVersion(); st == success {
		f.DriverVersion = v
	}
	for i := range n {
		d, st := lib.DeviceByIndex(i)
		if st != success {
			f.Devices = append(f.Devices, &fakeDevice{Errors: map[string]string{"*": st.Error()}})
			continue
		}
		f.Devices = append(f.Devices, recordDevice(d, at, window, true, f.Comm, procRoot))
	}
	return f, nil
}

func recordDevice(d device, at time.Time, window time.Duration, top bool, comm map[string]string, procRoot string) *fakeDevice {
	r := &fakeDevice{Errors: map[string]string{}}
	note := func(fn string, st status) bool {
		if st != success {
			r.Errors[fn] = st.Error()
		}
		return st == success
	}
	var st status
	r.UUIDValue, st = d.UUID()
	note("UUID", st)
	r.NameValue, st = d.Name()
	note("Name", st)
	r.Memory, st = d.MemoryInfo()
	note("MemoryInfo", st)
	r.Utilization, st = d.UtilizationRates()
	note("UtilizationRates", st)
	r.PowerMW, st = d.PowerUsage()
	note("PowerUsage", st)
	r.EnergyMilliJ, st = d.TotalEnergyConsumption()
	note("TotalEnergyConsumption", st)
	r.TempC, st = d.Temperature()
	note("Temperature", st)
	r.PCIeTxKBs, st = d.PcieThroughput(pcieTx)
	if note("PcieThroughput", st) {
		r.PCIeRxKBs, st = d.PcieThroughput(pcieRx)
		note("PcieThroughput", st)
	}
	r.ClocksEventReasons, st = d.CurrentClocksEventReasons()
	note("CurrentClocksEventReasons", st)
	if top {
		r.SupportedEvents, st = d.SupportedEventTypes()
		note("SupportedEventTypes", st)
		r.ECCUncorrected, st = d.TotalEccErrors(true)
		if note("TotalEccErrors", st) {
			r.ECCCorrected, st = d.TotalEccErrors(false)
			note("TotalEccErrors", st)
		}
	}
	r.Attrs, st = d.Attributes()
	note("Attributes", st)
	r.Compute, st = d.ComputeRunningProcesses(nil)
	note("ComputeRunningProcesses", st)
	r.Graphics, st = d.GraphicsRunningProcesses(nil)
	note("GraphicsRunningProcesses", st)
	for _, ps := range [][]processInfo{r.Compute, r.Graphics} {
		for _, p := range ps {
			key := strconv.FormatUint(uint64(p.PID), 10)
			if name := readComm(procRoot, p.PID); name != "" {
				comm[key] = name
			}
		}
	}
	since := uint64(at.Add(-window).UnixMicro())
	r.ProcessUtil, st = d.ProcessUtilization(nil, since)
	if st != errNotFound {
		note("ProcessUtilization", st)
	}
	if !top {
		return r
	}
	var mode, pending int
	mode, pending, st = d.MigMode()
	r.MIGMode = [2]int{mode, pending}
	note("MigMode", st)
	if st != success || mode != migEnabled {
		return r
	}
	r.MaxMIGDevices, st = d.MaxMigDeviceCount()
	note("MaxMigDeviceCount", st)
	for i := range r.MaxMIGDevices {
		m, st := d.MigDeviceByIndex(i)
		if st != success {
			r.MIGDevices = append(r.MIGDevices, nil)
			continue
		}
		r.MIGDevices = append(r.MIGDevices, recordDevice(m, at, window, false, comm, procRoot))
	}
	return r
}
