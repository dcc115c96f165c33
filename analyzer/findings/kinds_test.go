package findings

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
)

// TestKindTables: the detector table has one complete row per kind of
// schemas.FindingKinds, in its order; each kind has its section of Thresholds,
// named as the kind, and a detection window under the defaults; precedence
// names only known kinds.
func TestKindTables(t *testing.T) {
	var got []schemas.FindingKind
	for _, d := range detectors {
		got = append(got, d.kind)
		if d.detect == nil || d.window == nil {
			t.Errorf("%s: detector row without detect or window", d.kind)
		}
	}
	if !slices.Equal(got, schemas.FindingKinds) {
		t.Errorf("detectors %v, want one per kind of %v, in order", got, schemas.FindingKinds)
	}
	sections := map[string]bool{}
	tt := reflect.TypeFor[Thresholds]()
	for i := range tt.NumField() {
		sections[strings.Split(tt.Field(i).Tag.Get("yaml"), ",")[0]] = true
	}
	defaults := DefaultConfig().Defaults
	for _, k := range schemas.FindingKinds {
		if !sections[string(k)] {
			t.Errorf("Thresholds has no section %q for kind %s", k, k)
		}
		if defaults.Window(k) <= 0 {
			t.Errorf("%s: default window %v, want > 0", k, defaults.Window(k))
		}
	}
	if w := defaults.Window("nope"); w != 0 {
		t.Errorf("window of an unknown kind = %v, want 0", w)
	}
	for _, r := range precedence {
		for _, k := range append([]schemas.FindingKind{r.by}, r.suppresses...) {
			if !k.Known() && k != signalStall {
				t.Errorf("precedence names %q, not a kind", k)
			}
		}
	}
}
