package schemas

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestValidateColumnsRules checks the rules ingest applies to a sample batch
// beyond those Validate shares (TestValidate): each is refused naming its field.
func TestValidateColumnsRules(t *testing.T) {
	now := int64(1_796_000_100_000)
	extraGPU := func(b *SampleBatch, uuid string, dtMs int64, energy uint64) {
		g := b.GPUs[0]
		g.GPUUUID, g.TimeMs, g.EnergyMilliJ = uuid, g.TimeMs+dtMs, energy
		b.GPUs = append(b.GPUs, g)
	}
	extraProc := func(b *SampleBatch, uuid string, used uint32) {
		p := b.Processes[0]
		p.GPUUUID, p.PID, p.FBUsedMiB = uuid, p.PID+100, used
		b.Processes = append(b.Processes, p)
	}
	tests := []struct {
		name  string
		edit  func(*SampleBatch)
		field string // "" when the batch is good
		want  error
	}{
		{"good", func(*SampleBatch) {}, "", nil},
		{"gpu index at the UInt16 limit", func(b *SampleBatch) { b.GPUs[0].GPUIndex = math.MaxUint16 }, "", nil},
		{"gpu index past UInt16", func(b *SampleBatch) { b.GPUs[0].GPUIndex = math.MaxUint16 + 1 }, "gpu_index", ErrInvalidValue},
		{"energy at 2^64-1", func(b *SampleBatch) { b.GPUs[1].EnergyMilliJ = math.MaxUint64 }, "energy_mj", ErrInvalidValue},
		{"energy within 5 kW", func(b *SampleBatch) { extraGPU(b, "GPU-1", 1000, 123456789+5000*2000) }, "", nil},
		{"energy jump", func(b *SampleBatch) { extraGPU(b, "GPU-1", 1000, 123456789+5000*2000+1) }, "energy_mj", ErrInvalidValue},
		{"energy counter restarts", func(b *SampleBatch) { extraGPU(b, "GPU-1", 1000, 5) }, "", nil},
		{"process above its GPU", func(b *SampleBatch) { b.Processes[0].FBUsedMiB = 40961 }, "fb_used_mib", ErrInvalidValue},
		{"process at its GPU's total", func(b *SampleBatch) { b.Processes[0].FBUsedMiB = 40960 }, "", nil},
		{"processes together above their GPU", func(b *SampleBatch) {
			b.Processes[0].FBUsedMiB = 30000
			extraProc(b, "GPU-1", 20000)
		}, "fb_used_mib", ErrInvalidValue},
		{"processes together within their GPU", func(b *SampleBatch) {
			b.Processes[0].FBUsedMiB = 30000
			extraProc(b, "GPU-1", 10000)
		}, "", nil},
		{"process on a GPU not in the batch past physics", func(b *SampleBatch) { extraProc(b, "GPU-9", 5<<20) }, "fb_used_mib", ErrInvalidValue},
		{"process on a GPU not in the batch", func(b *SampleBatch) { extraProc(b, "GPU-9", 500_000) }, "", nil},
		{"control character in model", func(b *SampleBatch) { b.GPUs[1].Model = "NVIDIA H100\x07" }, "model", ErrInvalidIdentifier},
		{"non-ASCII model", func(b *SampleBatch) { b.GPUs[1].Model = "NVIDIA Tesla™ V100" }, "", nil},
		{"newline in driver version", func(b *SampleBatch) { b.GPUs[1].DriverVersion = "570\n" }, "driver_version", ErrInvalidIdentifier},
		{"control character in process name", func(b *SampleBatch) { b.Processes[2].ProcessName = "py\x1b[31m" }, "process_name", ErrInvalidIdentifier},
		{"job key with a space", func(b *SampleBatch) { b.Processes[0].Job = "k8s/ns pod" }, "job", ErrInvalidIdentifier},
		{"gpu uuid with a space", func(b *SampleBatch) { b.GPUs[2].GPUUUID = "MIG 3" }, "gpu_uuid", ErrInvalidIdentifier},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := sampleBatch()
			tt.edit(b)
			data, err := NewEncoder().Encode(nil, b)
			if err != nil {
				t.Fatal(err)
			}
			pb, err := NewDecoder().DecodeColumns(data)
			if err != nil {
				t.Fatal(err)
			}
			err = ValidateColumns(pb, now, 3600_000)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("ValidateColumns = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("ValidateColumns = %v, want %v (and ErrInvalidValue)", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("error %q does not name %s", err, tt.field)
			}
		})
	}
}

func TestEmptyMessages(t *testing.T) {
	_, err := NewDecoder().DecodeColumns(nil)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "empty message") || strings.Contains(err.Error(), "version 0") {
		t.Errorf("empty sample batch: %v", err)
	}
	_, err = DecodeJobEvents([]byte{})
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "empty message") || strings.Contains(err.Error(), "version 0") {
		t.Errorf("empty job event batch: %v", err)
	}
}

func TestJobEventRules(t *testing.T) {
	tests := []struct {
		name  string
		e     JobEvent
		field string
	}{
		{"submit with a team", JobEvent{TimeMs: 1, Job: "j", Event: EventSubmit, Team: "nlp", GPUs: MaxJobGPUs}, ""},
		{"submit without a team", JobEvent{TimeMs: 1, Job: "j", Event: EventSubmit, GPUs: 1}, "team"},
		{"start without a team", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, GPUs: 1}, ""},
		{"a wrapped count of GPUs", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, GPUs: math.MaxUint32}, "gpus"},
		{"one past the bound", JobEvent{TimeMs: 1, Job: "j", Event: EventSubmit, Team: "nlp", GPUs: MaxJobGPUs + 1}, "gpus"},
		{"MIG instances", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, Card: "A100-80GB", MIGProfile: "1g.10gb", MIGInstances: 3}, ""},
		{"MIG instances without a profile", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, MIGInstances: 3}, "mig_instances"},
		{"MIG instances past the bound", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, MIGProfile: "1g.10gb", MIGInstances: MaxJobGPUs + 1}, "mig_instances"},
		{"whole GPUs beside MIG instances", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, GPUs: 3, MIGProfile: "1g.10gb", MIGInstances: 3}, "gpus"},
		{"a MIG profile that is no name", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, MIGProfile: "1g 10gb", MIGInstances: 1}, "mig_profile"},
		{"a fraction", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, Card: "H100-80GB", GPUFraction: 250, Sharing: "mps"}, ""},
		{"a fraction of 1000", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, GPUFraction: 1000, Sharing: "mps"}, "gpu_fraction"},
		{"a fraction without a mode", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, GPUFraction: 250}, "sharing"},
		{"a sharing mode without a fraction", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, GPUs: 1, Sharing: "mps"}, "sharing"},
		{"whole GPUs beside a fraction", JobEvent{TimeMs: 1, Job: "j", Event: EventStart, GPUs: 1, GPUFraction: 250, Sharing: "timeslice"}, "gpu_fraction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := EncodeJobEvents(nil, &JobEventBatch{Events: []JobEvent{tt.e}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeJobEvents(data)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("DecodeJobEvents = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), tt.field+":") {
				t.Fatalf("DecodeJobEvents = %v, want ErrInvalidValue naming %s", err, tt.field)
			}
		})
	}
}
