package findings

import (
	"slices"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// TestPrecedenceTable checks the one order conflicting evidence resolves in: a
// job with a hang, a stall or idleness receives no advice; the zombie rules are
// narrowed to long inactivity; other jobs keep theirs.
func TestPrecedenceTable(t *testing.T) {
	det := func(k schemas.FindingKind, job, reason string) detection {
		d := detection{reason: reason}
		d.f.Kind, d.f.Job, d.f.ID = k, job, string(k)+"/"+job
		return d
	}
	for _, tc := range []struct {
		name    string
		by      schemas.FindingKind // the suppressing finding or signal
		open    bool                // by is an open finding rather than seen now
		survive []schemas.FindingKind
	}{
		{"hung now", schemas.KindHung, false, []schemas.FindingKind{schemas.KindHung}},
		{"hung open", schemas.KindHung, true, nil},
		{"stall", signalStall, false, []schemas.FindingKind{schemas.KindZombie}},
		{"idle now", schemas.KindIdle, false, []schemas.FindingKind{schemas.KindIdle}},
		{"memory_bound", schemas.KindMemoryBound, false, []schemas.FindingKind{schemas.KindZombie, schemas.KindMemoryBound,
			schemas.KindMemoryCapacity, schemas.KindWrongCard, schemas.KindComputeBound}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The job has every advice kind and a long-inactivity zombie, plus the suppressor.
			detected := map[schemas.FindingKind][]detection{schemas.KindZombie: {det(schemas.KindZombie, "j", "inactive")}}
			for _, k := range adviceKinds {
				detected[k] = []detection{det(k, "j", "")}
			}
			open := map[string]schemas.Finding{}
			stalled := map[string]bool{}
			switch {
			case tc.by == signalStall:
				stalled["j"] = true
			case tc.open:
				open["x"] = schemas.Finding{Kind: tc.by, Job: "j"}
			default:
				detected[tc.by] = []detection{det(tc.by, "j", "")}
			}
			applyPrecedence(open, detected, stalled)
			var got []schemas.FindingKind
			for _, k := range schemas.FindingKinds {
				if len(detected[k]) > 0 {
					got = append(got, k)
				}
			}
			want := slices.Clone(tc.survive)
			slices.SortFunc(want, func(a, b schemas.FindingKind) int {
				return slices.Index(schemas.FindingKinds, a) - slices.Index(schemas.FindingKinds, b)
			})
			if !slices.Equal(got, want) {
				t.Errorf("surviving %v, want %v", got, want)
			}
		})
	}
	t.Run("other jobs keep their advice", func(t *testing.T) {
		detected := map[schemas.FindingKind][]detection{
			schemas.KindHung:           {det(schemas.KindHung, "stuck", "")},
			schemas.KindMemoryCapacity: {det(schemas.KindMemoryCapacity, "stuck", ""), det(schemas.KindMemoryCapacity, "server", "")},
		}
		applyPrecedence(nil, detected, map[string]bool{"stalled": true})
		if len(detected[schemas.KindMemoryCapacity]) != 1 || detected[schemas.KindMemoryCapacity][0].f.Job != "server" {
			t.Errorf("memory_capacity left: %v", detected[schemas.KindMemoryCapacity])
		}
	})
	t.Run("every advice kind is suppressed by hung, stall and idle", func(t *testing.T) {
		for _, k := range adviceKinds {
			by := suppressedBy(k)
			for _, s := range []schemas.FindingKind{schemas.KindHung, signalStall, schemas.KindIdle} {
				if !slices.Contains(by, s) {
					t.Errorf("%s is not suppressed by %s", k, s)
				}
			}
		}
	})
}
