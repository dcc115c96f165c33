package bench

import (
	"bytes"
	"context"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"
)

// spinCPU burns at least d of this thread's CPU time (not wall time: the
// machine is shared).
func spinCPU(d time.Duration) {
	var ru syscall.Rusage
	cpu := func() time.Duration {
		_ = syscall.Getrusage(syscall.RUSAGE_THREAD, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, x := cpu(), 1.0
	for cpu()-start < d {
		for range 100000 {
			x = x*1.0000001 + 1e-9
		}
	}
	_ = x
}

// TestDecodeCPUProfileByLabel: the benchmark's profile reader sums a real
// runtime/pprof profile by label: CPU burnt inside pprof.Do under a label comes
// out under that label, in this module's function, and not under another.
func TestDecodeCPUProfileByLabel(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skipf("a CPU profile is running already: %v", err)
	}
	pprof.Do(context.Background(), pprof.Labels("component", "busy"), func(context.Context) { spinCPU(400 * time.Millisecond) })
	pprof.Do(context.Background(), pprof.Labels("stream", "S"), func(context.Context) { spinCPU(200 * time.Millisecond) })
	pprof.StopCPUProfile()
	got, err := decodeCPUProfile(buf.Bytes(), "component", map[string]string{"stream": "nats"}, "github.com/gpupool/gpupool/bench")
	if err != nil {
		t.Fatal(err)
	}
	if got.byValue["busy"] < int64(100*time.Millisecond) {
		t.Errorf("CPU under component=busy: %v, want most of the 400ms burnt there (all: %v)", time.Duration(got.byValue["busy"]), got.byValue)
	}
	if got.byValue["nats"] < int64(50*time.Millisecond) {
		t.Errorf("CPU under stream=S, aliased to nats: %v, want most of the 200ms burnt there (all: %v)", time.Duration(got.byValue["nats"]), got.byValue)
	}
	if got.byValue["other"] != 0 {
		t.Errorf("a label never set has CPU: %v", got.byValue)
	}
	if got.frames["busy"]["github.com/gpupool/gpupool/bench.spinCPU"] == 0 {
		t.Errorf("spinCPU not among component=busy's frames: %v", got.frames["busy"])
	}
	if _, err := decodeCPUProfile([]byte("not gzip"), "component", nil, ""); err == nil {
		t.Error("a profile that is not gzip decoded without error")
	}
}
