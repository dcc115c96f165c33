package sim

import (
	"testing"
)

// TestNotebookSpikes checks that an idle notebook shows exactly one active tick
// per spike period, and none in its first period, so the idle truth holds.
func TestNotebookSpikes(t *testing.T) {
	const tickMs = 10_000
	j := &job{
		kind: kindNotebook, startMs: 1_000_000,
		segs:         []segment{{0, minutes(10), false}, {minutes(10), hours(3), true}},
		spikeEveryMs: minutes(30),
		prof:         profile{gr: 0.5, sm: 0.3, jitter: 0.1},
	}
	tests := []struct {
		name       string
		from, to   int64
		wantActive int
	}{
		{"active segment", 0, minutes(10), int(minutes(10) / tickMs)},
		{"idle first half hour", minutes(10), minutes(40) - tickMs, 0},
		{"idle two hours", minutes(10), minutes(130), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			active := 0
			for el := tt.from; el < tt.to; el += tickMs {
				nz := newNoise(uint64(el))
				a := j.activity(j.startMs+el, tickMs, 0, &nz)
				if a.gr > 0.05 {
					active++
				}
				if a.memScale != 1 {
					t.Fatalf("at %d ms memory scale %v, want the notebook to hold its memory", el, a.memScale)
				}
			}
			if active != tt.wantActive {
				t.Errorf("%d active ticks, want %d", active, tt.wantActive)
			}
		})
	}
}

// TestOnlineDiurnal checks that an inference service is busier by day than by
// night and never drops to zero.
func TestOnlineDiurnal(t *testing.T) {
	j := &job{kind: kindOnline, salt: 42, prof: profile{gr: 0.3, night: 0.05, jitter: 0.15}}
	var day, night float32
	var nDay, nNight int
	for ms := int64(0); ms < dayMs; ms += 10_000 {
		nz := newNoise(uint64(ms))
		a := j.activity(ms, 10_000, 0, &nz)
		if a.gr < 0.02 || a.gr > 0.6 {
			t.Fatalf("at %d ms gr = %v, want 0.02..0.6", ms, a.gr)
		}
		switch h := ms / 3_600_000; {
		case h >= 12 && h < 18:
			day += a.gr
			nDay++
		case h >= 1 && h < 6:
			night += a.gr
			nNight++
		}
	}
	if day/float32(nDay) < 2*night/float32(nNight) {
		t.Errorf("mean day activity %v, night %v: want a clear diurnal swing", day/float32(nDay), night/float32(nNight))
	}
}

// TestTrainingPhases checks the data-loading phase (busy PCIe, filling memory,
// compute nearly idle) and the checkpoint dips.
func TestTrainingPhases(t *testing.T) {
	j := &job{
		kind: kindTraining, loadMs: minutes(15), ckptEveryMs: minutes(30), ckptLenMs: 30_000,
		prof: profile{gr: 0.95, sm: 0.8, occ: 0.4, tensor: 0.5, dram: 0.4, rxBytesPerS: 5e8, txBytesPerS: 1e8, jitter: 0.04},
	}
	nz := newNoise(1)
	if a := j.activity(minutes(5), 10_000, 0, &nz); a.gr >= 0.05 || a.rxBytesPerS < 1e9 || a.memScale >= 1 {
		t.Errorf("loading: %+v", a)
	}
	if a := j.activity(minutes(20), 10_000, 0, &nz); a.gr < 0.85 || a.memScale != 1 {
		t.Errorf("training: %+v", a)
	}
	if a := j.activity(minutes(15+30)-10_000, 10_000, 0, &nz); a.gr > 0.1 || a.txBytesPerS < 1e9 {
		t.Errorf("checkpoint: %+v", a)
	}
}
