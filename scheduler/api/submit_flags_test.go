package api

import (
	"testing"
	"time"
)

// TestSubmitFlagsSpec: every flag reaches its JobSpec field.
func TestSubmitFlagsSpec(t *testing.T) {
	nb := time.Date(2026, 12, 24, 21, 0, 0, 0, time.UTC)
	f := SubmitFlags{Queue: "dev", Team: "nlp", Project: "chat", Name: "n", GPUs: 1, Card: "H100-80GB", MIGProfile: "",
		GPUFraction: 250, Sharing: "mps", GPUMemoryMiB: 20000, Clusters: []string{"a", "b"}, Locality: map[string]string{"region": "eu"},
		Priority: "low", NotPreemptible: true, Checkpointable: true, Workload: "dev", ModelName: "m", TimeLimit: 90 * time.Minute,
		NotBefore: nb, Window: "22:00-07:00", TimeZone: "Europe/Berlin", Label: map[string]string{"k": "v"}}
	s := f.Spec()
	if s.Queue != "dev" || s.Team != "nlp" || s.Project != "chat" || s.GPUFraction != 250 || s.Sharing != "mps" || s.GPUMemoryMiB != 20000 ||
		len(s.Clusters) != 2 || s.Locality["region"] != "eu" || s.PriorityClass != "low" || s.Preemptible == nil || *s.Preemptible ||
		!s.Checkpointable || s.TimeLimitS != 5400 || s.NotBefore == nil || !s.NotBefore.Equal(nb) || s.Window != "22:00-07:00" ||
		s.TimeZone != "Europe/Berlin" || s.Labels["k"] != "v" || s.ModelName != "m" || s.Workload != "dev" || s.Card != "H100-80GB" {
		t.Fatalf("spec %+v", s)
	}
	if s := (&SubmitFlags{Queue: "q", Team: "t", GPUs: 2}).Spec(); s.Preemptible != nil || s.NotBefore != nil {
		t.Fatalf("defaults: preemptible %v, not_before %v; want both unset", s.Preemptible, s.NotBefore)
	}
}
