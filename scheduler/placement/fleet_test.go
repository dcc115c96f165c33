package placement

import (
	"errors"
	"strings"
	"testing"
)

func TestFleetValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(f *Fleet)
		fault string // the field the error names; "" valid
	}{
		{"valid", func(f *Fleet) {}, ""},
		{"no cards", func(f *Fleet) { f.Cards = nil }, "cards: list at least one"},
		{"duplicate level", func(f *Fleet) { f.Levels = []string{"rack", "rack"} }, "levels[1]"},
		{"unknown card", func(f *Fleet) { f.Clusters[0].Nodes[1].Card = "B200" }, "clusters[0].nodes[1].card"},
		{"duplicate node", func(f *Fleet) { f.Clusters[1].Nodes[0].Name = "c0-n00" }, "clusters[1].nodes[0].name"},
		{"too many gpus", func(f *Fleet) { f.Clusters[0].Nodes[0].GPUs = 65 }, "clusters[0].nodes[0].gpus"},
		{"missing label", func(f *Fleet) { delete(f.Clusters[0].Nodes[2].Topology, "block") }, "clusters[0].nodes[2].topology.block"},
		{"unknown level", func(f *Fleet) { f.Clusters[0].Nodes[2].Topology["row"] = "x" }, "clusters[0].nodes[2].topology.row"},
		{"not nested", func(f *Fleet) { f.Clusters[0].Nodes[1].Topology["block"] = "b9" }, "clusters[0].nodes[1].topology.block"},
		{"mig over 7 slices", func(f *Fleet) { f.Clusters[0].Nodes[0].MIG = [][]string{{"4g.40gb", "4g.40gb"}} }, "clusters[0].nodes[0].mig[0]: instances use 8"},
		{"mig wrong set", func(f *Fleet) { f.Clusters[0].Nodes[0].MIG = [][]string{{"3g.20gb"}} }, "clusters[0].nodes[0].mig[0][0]"},
		{"mig ok", func(f *Fleet) {
			f.Clusters[0].Nodes[0].MIG = [][]string{{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}, nil, {"7g.80gb"}}
		}, ""},
		{"mig a100-40", func(f *Fleet) {
			f.Clusters[0].Nodes[0].Card = "A100-40GB"
			f.Clusters[0].Nodes[0].MIG = [][]string{{"3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"}}
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := testFleet(2, 4, 8, 2)
			tc.edit(&f)
			err := f.Validate()
			if tc.fault == "" {
				if err != nil {
					t.Fatalf("valid fleet refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidFleet) || !strings.Contains(err.Error(), tc.fault) {
				t.Fatalf("error %v, want one naming %q", err, tc.fault)
			}
		})
	}
}
