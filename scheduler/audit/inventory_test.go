package audit

import (
	"reflect"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
)

// TestStoreInventory reads the nodes that sampled GPUs in a window: a node's
// distinct GPU indices (a MIG-partitioned GPU's instances count once), its
// card, and nothing outside the window.
func TestStoreInventory(t *testing.T) {
	s := openStore(t)
	db := s.Database()
	q := `INSERT INTO ` + db + `.gpu_samples (ts, cluster, node, gpu_uuid, gpu_index, model, card, mig_profile) VALUES
	('2026-12-01 09:10:00', 'c1', 'n1', 'GPU-0', 0, 'NVIDIA H100', 'H100-80GB', ''),
	('2026-12-01 09:11:00', 'c1', 'n1', 'GPU-1', 1, 'NVIDIA H100', 'H100-80GB', ''),
	('2026-12-01 09:12:00', 'c1', 'n2', 'MIG-a', 0, 'NVIDIA A100', 'A100-40GB', '3g.20gb'),
	('2026-12-01 09:12:00', 'c1', 'n2', 'MIG-b', 0, 'NVIDIA A100', 'A100-40GB', '3g.20gb'),
	('2026-12-01 07:00:00', 'c2', 'old', 'GPU-9', 0, 'NVIDIA L40S', 'L40S-48GB', '')`
	if err := s.Exec(t.Context(), q, nil); err != nil {
		t.Fatal(err)
	}
	got, err := NewStoreInventory(s).Seen(t.Context(), t0, t0.Add(15*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := []placement.Seen{{Cluster: "c1", Node: "n1", Card: "H100-80GB", GPUs: 2}, {Cluster: "c1", Node: "n2", Card: "A100-40GB", GPUs: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Seen:\n got %+v\nwant %+v", got, want)
	}
}
