package audit

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/store"
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

// shortStore answers every query with one row that lacks the columns asked for,
// as a query edited without its reader would.
type shortStore struct{ Store }

func (shortStore) Query(context.Context, string, store.Params) (*store.Result, error) {
	return &store.Result{Columns: []store.ColumnMeta{{Name: "cluster"}}, Rows: [][]any{{"c1"}}}, nil
}

func (shortStore) Database() string { return "gpupool" }

// TestReadersReportAMissingColumn: the inventory, the open findings and the
// actions each fail with an error naming the missing column and the query,
// rather than reading zeros.
func TestReadersReportAMissingColumn(t *testing.T) {
	st := shortStore{}
	_, errSeen := NewStoreInventory(st).Seen(t.Context(), t0, t0.Add(time.Hour))
	_, errFindings := NewStoreFindings(st).Findings(t.Context(), t0)
	_, errActions := NewStoreRecorder(st).Actions(t.Context(), scheduler.ActionFilter{})
	for name, c := range map[string]struct {
		err        error
		column, in string
	}{
		"Seen":     {errSeen, `"node"`, "gpu_samples by node"},
		"Findings": {errFindings, `"id"`, "findings_open"},
		"Actions":  {errActions, `"id"`, "actions"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.column) || !strings.Contains(c.err.Error(), c.in) {
			t.Errorf("%s: error %v, want one naming column %s and %q", name, c.err, c.column, c.in)
		}
	}
}
