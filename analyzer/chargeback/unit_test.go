package chargeback

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

// TestGPUWeightSQLMatchesGo runs schemas.GPUWeightSQL, the expression the core
// weighs MIG slices by, in the store and compares it with schemas.GPUWeight:
// the GPU unit has one definition, in two languages.
func TestGPUWeightSQLMatchesGo(t *testing.T) {
	cases := [][2]string{
		{"H100-80GB", ""}, {"H100-80GB", "1g.10gb"}, {"H100-80GB", "3g.40gb"}, {"A100-40GB", "1g.5gb"},
		{"A100-40GB", "7g.40gb"}, {"A30-24GB", "1g.6gb"}, {"A30-24GB", "2g.12gb"}, {"H100-80GB", "1c.3g.40gb"},
		{"H100-80GB", "odd"}, {"H100-80GB", "300g.1gb"},
	}
	var rows []string
	for i, c := range cases {
		rows = append(rows, fmt.Sprintf("SELECT %d AS i, '%s' AS card, '%s' AS p", i, c[0], c[1]))
	}
	q := "SELECT i, " + schemas.GPUWeightSQL("card", "p") + " AS w FROM (" + strings.Join(rows, " UNION ALL ") + ") ORDER BY i"
	s := chdbtest.Open(t)
	res, err := s.Query(t.Context(), q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != len(cases) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(cases))
	}
	for i, c := range cases {
		got, err := res.Float(i, "w")
		if err != nil {
			t.Fatal(err)
		}
		if want := schemas.GPUWeight(c[0], c[1]); math.Abs(got-want) > 1e-12 {
			t.Errorf("%s %q: SQL weighs %v, Go %v", c[0], c[1], got, want)
		}
	}
	if !strings.Contains(renderCore(rollupSources), schemas.GPUWeightSQL("card", "g_mig_profile")) {
		t.Error("the chargeback core does not weigh MIG slices by schemas.GPUWeightSQL")
	}
}
