package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var findingT0 = time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)

// wrongCardFinding is a finding with every field the analyzer writes set.
func wrongCardFinding() Finding {
	t0 := findingT0
	return Finding{ID: "3f2a9c0d1e4b5a6c7d8e", Kind: KindWrongCard, State: StateUpdated, Episode: 2,
		Severity: SeverityWarning, Cluster: "c1", Node: "gpu-a-001", Job: "k8s/nlp/pod-1", Team: "nlp", Project: "chat",
		Pool: "dev", Card: "H100-80GB", GPUUUIDs: []string{"GPU-1", "GPU-2"}, Since: t0.Add(-time.Hour), FirstSeen: t0.Add(-50 * time.Minute),
		LastSeen: t0, UpdatedAt: t0, Evidence: map[string]float64{"window_minutes": 60, "samples": 240, "fb_used_max_mib": 9000.5},
		WasteGPUHours: 1.25, WasteCost: 4.5, Currency: "EUR", Recommended: "L40S-48GB", Recommendation: "use an L40S-48GB"}
}

// goldenMessages are the messages of testdata/findings: the files were written by
// the encoders the analyzer and the scheduler used before this package held them,
// so a change of the wire shows here.
func goldenMessages() map[string]*FindingMessage {
	t0 := findingT0
	full := wrongCardFinding()
	resolved := Finding{ID: "aa11", Kind: KindZombie, State: StateResolved, Episode: 1, Severity: SeverityCritical,
		Node: "gpu-b-002", GPUUUIDs: []string{"GPU-9"}, PID: 4242, Since: t0.Add(-3 * time.Hour), FirstSeen: t0.Add(-170 * time.Minute),
		LastSeen: t0.Add(-20 * time.Minute), ResolvedAt: t0, UpdatedAt: t0, WasteGPUHours: 2.5, WasteCost: 10, Currency: "USD"}
	bare := Finding{ID: "bb22", Kind: KindIdle, State: StateOpen, Episode: 1, Severity: SeverityInfo, Job: "slurm/c1/42", FirstSeen: t0, UpdatedAt: t0}
	return map[string]*FindingMessage{
		"finding_changed.json":     {Event: EventChanged, Finding: full},
		"finding_resolved.json":    {Event: EventResolved, Finding: resolved},
		"finding_opened_bare.json": {Event: EventOpened, Finding: bare},
		"notice.json": {Event: EventNotice, Notice: &Notice{
			Time: t0.Add(time.Minute), Team: full.Team, Project: full.Project, Job: full.Job, Policy: "wrong-card", Finding: full,
			NextAction: "reclaim", NextAt: t0.Add(16 * time.Minute), Next: "reclaim at 09:46", Message: "words",
		}},
		"notice_last_step.json": {Event: EventNotice, Notice: &Notice{
			Time: t0, Finding: Finding{ID: "cc33", Kind: KindZombie, Episode: 3, Node: "gpu-c-003", PID: 77},
		}},
	}
}

func readGolden(t *testing.T, name string, got []byte) []byte {
	t.Helper()
	path := filepath.Join("testdata", "findings", name)
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(want, []byte("\n"))
}

func TestFindingMessageGolden(t *testing.T) {
	for name, m := range goldenMessages() {
		t.Run(name, func(t *testing.T) {
			got, err := EncodeFindingMessage(m)
			if err != nil {
				t.Fatal(err)
			}
			if want := readGolden(t, name, got); !bytes.Equal(got, want) {
				t.Errorf("encoded\n%s\nwant\n%s", got, want)
			}
			// Decoding and encoding again gives the same bytes.
			back, err := DecodeFindingMessage(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := EncodeFindingMessage(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, got) {
				t.Errorf("re-encoded\n%s\nwant\n%s", again, got)
			}
		})
	}
}

func TestFindingPublicJSON(t *testing.T) {
	f := wrongCardFinding()
	got, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := readGolden(t, "finding_public.json", got); !bytes.Equal(got, want) {
		t.Errorf("encoded\n%s\nwant\n%s", got, want)
	}
	var back Finding
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != f.ID || back.Kind != f.Kind || back.State != f.State || len(back.GPUUUIDs) != 2 ||
		!back.Since.Equal(f.Since) || back.Evidence["samples"] != 240 || back.Recommended != f.Recommended {
		t.Errorf("decoded %+v", back)
	}
	// Labels, which the analyzer never sets, travel only when given (the
	// scheduler's POST /v1/findings).
	f.Labels = map[string]string{"gpupool.io/no-reclaim": "true"}
	data, _ := json.Marshal(f)
	if err := json.Unmarshal(data, &back); err != nil || back.Labels["gpupool.io/no-reclaim"] != "true" {
		t.Errorf("labels lost: %s: %v", data, err)
	}
}

func TestUnmarshalFindingResolvedFlag(t *testing.T) {
	// A push to the scheduler may withdraw a finding with resolved alone.
	var f Finding
	if err := json.Unmarshal([]byte(`{"id":"f1","kind":"idle","resolved":true,"gpu_uuids":[],"evidence":{}}`), &f); err != nil {
		t.Fatal(err)
	}
	if !f.Resolved() || f.State != StateResolved || f.GPUUUIDs != nil || f.Evidence != nil {
		t.Errorf("decoded %+v", f)
	}
}

func TestUnmarshalFindingUnknownField(t *testing.T) {
	var f Finding
	err := json.Unmarshal([]byte(`{"id":"f1","kidn":"idle"}`), &f)
	if err == nil || !strings.Contains(err.Error(), `unknown field "kidn"`) {
		t.Errorf("error %v, want one naming the unknown field", err)
	}
}

func TestDecodeFindingMessage(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		check func(t *testing.T, m *FindingMessage)
	}{
		{"opened", `{"event":"opened","id":"f1","kind":"idle","state":"open","episode":1,"severity":"warning","team":"nlp","gpu_uuids":["GPU-1"]}`,
			func(t *testing.T, m *FindingMessage) {
				if m.Event != EventOpened || m.Finding.ID != "f1" || m.Finding.Kind != KindIdle || m.Notice != nil || m.Finding.GPUUUIDs[0] != "GPU-1" {
					t.Errorf("%+v", m)
				}
			}},
		{"no kind, state or severity", `{"event":"escalated","id":"f1"}`,
			func(t *testing.T, m *FindingMessage) {
				if m.Event != EventEscalated || m.Finding.Kind != "" {
					t.Errorf("%+v", m)
				}
			}},
		{"notice", `{"event":"notice","id":"","finding_id":"f2","kind":"zombie","episode":3,"team":"cv","job":"j","updated_at":"2026-03-02T09:30:00Z","action":"kill","action_at":"2026-03-02T09:45:00Z","dry_run":true}`,
			func(t *testing.T, m *FindingMessage) {
				n := m.Notice
				if n == nil || m.Finding.ID != "f2" || n.Finding.ID != "f2" || n.Team != "cv" || n.Job != "j" || n.NextAction != "kill" ||
					!n.NextAt.Equal(findingT0.Add(15*time.Minute)) || !n.Time.Equal(findingT0) || !n.DryRun || m.Finding.Episode != 3 {
					t.Errorf("%+v %+v", m, n)
				}
			}},
		{"resolved flag", `{"event":"resolved","id":"f1","resolved":true}`,
			func(t *testing.T, m *FindingMessage) {
				if !m.Finding.Resolved() {
					t.Errorf("%+v", m)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeFindingMessage([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, m)
		})
	}
}

func TestDecodeFindingMessageErrors(t *testing.T) {
	tests := []struct {
		name, data string
		is         error
		says       string
	}{
		{"empty", ``, ErrMalformed, "unexpected end of JSON input"},
		{"not an object", `[1,2]`, ErrMalformed, "cannot unmarshal array"},
		{"wrong type", `{"event":"opened","id":"f1","episode":"two"}`, ErrMalformed, "episode"},
		{"no id", `{"event":"opened","kind":"idle"}`, ErrMalformed, "no id or finding_id"},
		{"no event", `{"id":"f1","kind":"idle"}`, ErrMalformed, "finding message f1: malformed message: no event"},
		{"unknown event", `{"event":"closed","id":"f1"}`, ErrInvalidValue, `event "closed" is not one of [opened escalated changed resolved notice]`},
		{"unknown kind", `{"event":"opened","id":"f1","kind":"slow"}`, ErrInvalidValue, `kind "slow" is not one of [idle zombie hung memory_bound memory_capacity wrong_card low_util compute_bound]`},
		{"unknown state", `{"event":"opened","id":"f1","state":"closed"}`, ErrInvalidValue, `state "closed" is not open, updated or resolved`},
		{"unknown severity", `{"event":"opened","id":"f1","severity":"high"}`, ErrInvalidValue, `severity "high" is not one of [info warning critical]`},
		{"resolved but open", `{"event":"changed","id":"f1","state":"open","resolved":true}`, ErrInvalidValue, `resolved is true but state is "open"`},
		{"notice names its finding", `{"event":"notice","action":"kill"}`, ErrMalformed, "no id or finding_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeFindingMessage([]byte(tt.data))
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %v, want %v saying %q", err, tt.is, tt.says)
			}
		})
	}
}

func TestEncodeFindingMessageErrors(t *testing.T) {
	for _, m := range []*FindingMessage{{Event: EventNotice}, {Event: "closed"}, {}} {
		if _, err := EncodeFindingMessage(m); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("%+v: error %v, want ErrInvalidValue", m, err)
		}
	}
}

func TestSeverityRank(t *testing.T) {
	for s, want := range map[Severity]int{SeverityInfo: 1, SeverityWarning: 2, SeverityCritical: 3, "": 0, "high": 0} {
		if got := s.Rank(); got != want {
			t.Errorf("%q.Rank() = %d, want %d", s, got, want)
		}
	}
}

func FuzzDecodeFindingMessage(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "findings", "*.json"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/findings: %v", err)
	}
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"event":"resolved","id":"x","resolved":true}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeFindingMessage(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		// What decodes encodes, and decodes again to the same message.
		enc, err := EncodeFindingMessage(m)
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		back, err := DecodeFindingMessage(enc)
		if err != nil {
			t.Fatalf("encoded message %s does not decode: %v", enc, err)
		}
		again, err := EncodeFindingMessage(back)
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not stable: %s then %s (%v)", enc, again, err)
		}
	})
}
