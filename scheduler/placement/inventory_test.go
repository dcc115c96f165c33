package placement

import (
	"reflect"
	"testing"
)

func TestReconcile(t *testing.T) {
	f := testFleet(2, 2, 8, 1) // c0-n00, c0-n01, c1-n00, c1-n01: 8 × H100-80GB
	seen := []Seen{
		{Cluster: "c0", Node: "c0-n00", Card: "H100-80GB", GPUs: 8}, // as configured
		{Cluster: "c0", Node: "c0-n01", Card: "A100-40GB", GPUs: 8}, // another card
		{Cluster: "c1", Node: "c1-n00", Card: "H100-80GB", GPUs: 7}, // a GPU silent
		{Cluster: "c1", Node: "c1-n09", Card: "H100-80GB", GPUs: 8}, // not configured
		{Cluster: "c0", Node: "c1-n01", Card: "H100-80GB", GPUs: 8}, // right name, wrong cluster
	}
	got := f.Reconcile(seen)
	want := []Discrepancy{
		{Kind: "card", Cluster: "c0", Node: "c0-n01", Configured: "8 × H100-80GB", Reported: "8 × A100-40GB"},
		{Kind: "gpus", Cluster: "c1", Node: "c1-n00", Configured: "8 × H100-80GB", Reported: "7 × H100-80GB"},
		{Kind: "missing", Cluster: "c1", Node: "c1-n01", Configured: "8 × H100-80GB"},
		{Kind: "unknown", Cluster: "c0", Node: "c1-n01", Reported: "8 × H100-80GB"},
		{Kind: "unknown", Cluster: "c1", Node: "c1-n09", Reported: "8 × H100-80GB"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Reconcile:\n got %+v\nwant %+v", got, want)
	}
	if s := got[3].String(); s != "node c0/c1-n01 reports 8 × H100-80GB but is not in the model: no job is placed on it" {
		t.Errorf("unknown node's line: %q", s)
	}
	all := []Seen{
		{Cluster: "c0", Node: "c0-n00", Card: "H100-80GB", GPUs: 8}, {Cluster: "c0", Node: "c0-n01", GPUs: 8},
		{Cluster: "c1", Node: "c1-n00", Card: "H100-80GB", GPUs: 8}, {Cluster: "c1", Node: "c1-n01", Card: "H100-80GB", GPUs: 8},
	}
	if d := f.Reconcile(all); len(d) != 0 {
		t.Errorf("a fleet reporting as configured (one card unnamed): %v", d)
	}
}
