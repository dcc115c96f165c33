package traceanalysis

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/schemas"
)

// TestScore scores findings against a truth file: a hung job found
// late, an idle tenant missed, a zombie found, a memory_capacity advice on the
// hung job that no truth holds (a false finding).
func TestScore(t *testing.T) {
	truth, err := ReadTruth(strings.NewReader(`# a 2-GPU job hung at 01:30, an idle tenant, a zombie
{"kind": "hung", "job": "slurm/c1/1001", "start": "2026-12-01T01:30:00Z"}
{"kind": "idle", "job": "k8s/nb/tenant-b", "start": "2026-12-01T00:00:00Z", "end": "2026-12-01T03:00:00Z"}

{"kind": "zombie", "job": "slurm/c1/1002", "node": "n3", "pid": 4242, "start": "2026-12-01T02:00:00Z"}
`))
	if err != nil {
		t.Fatal(err)
	}
	at := func(h, m int) time.Time { return time.Date(2026, 12, 1, h, m, 0, 0, time.UTC) }
	fs := []schemas.Finding{
		{Kind: schemas.KindHung, Job: "slurm/c1/1001", Since: at(1, 30), FirstSeen: at(1, 50), LastSeen: at(3, 0)},
		{Kind: schemas.KindMemoryCapacity, Job: "slurm/c1/1001", FirstSeen: at(2, 40), LastSeen: at(3, 0)},
		{Kind: schemas.KindZombie, Job: "slurm/c1/1002", Node: "n3", PID: 4242, Since: at(2, 0), FirstSeen: at(2, 10), LastSeen: at(2, 30)},
	}
	scores := Score(fs, truth, Windows(findings.DefaultConfig()), at(3, 0))
	by := map[schemas.FindingKind]KindScore{}
	for _, s := range scores {
		by[s.Kind] = s
	}
	if s := by[schemas.KindHung]; s.Precision() != 1 || s.Recall() != 1 || math.Abs(s.Coverage-1) > 1e-9 {
		t.Errorf("hung: precision %v recall %v coverage %v", s.Precision(), s.Recall(), s.Coverage)
	}
	if s := by[schemas.KindMemoryCapacity]; s.Precision() != 0 || len(s.FalseFindings) != 1 {
		t.Errorf("memory_capacity on a hung job: %+v", s)
	}
	if s := by[schemas.KindIdle]; s.Recall() != 0 || len(s.Misses) != 1 {
		t.Errorf("idle tenant: %+v", s)
	}
	// The zombie lasted 60 min; findings asserted 00:20 of its 01:00 after 02:00.
	if s := by[schemas.KindZombie]; s.Recall() != 1 || math.Abs(s.Coverage-0.5) > 1e-9 {
		t.Errorf("zombie: recall %v coverage %v", s.Recall(), s.Coverage)
	}
	var b strings.Builder
	if err := WriteScore(&b, scores); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "false: memory_capacity slurm/c1/1001") || !strings.Contains(b.String(), "missed: idle k8s/nb/tenant-b") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestReadTruthRejects(t *testing.T) {
	for _, line := range []string{`{"kind":"nope","job":"j","start":"2026-12-01T00:00:00Z"}`, `{"kind":"idle","start":"2026-12-01T00:00:00Z"}`,
		`{"kind":"idle","job":"j","start":"2026-12-01T02:00:00Z","end":"2026-12-01T01:00:00Z"}`, `not json`} {
		if _, err := ReadTruth(strings.NewReader("\n" + line)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: err %v, want one naming line 2", line, err)
		}
	}
}
