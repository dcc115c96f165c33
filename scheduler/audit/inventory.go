package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement"
	"github.com/gpupool/gpupool/store"
)

// StoreInventory reads which nodes the collectors reported, from the store's
// GPU samples.
type StoreInventory struct{ st Store }

// NewStoreInventory reads the inventory from st.
func NewStoreInventory(st Store) *StoreInventory { return &StoreInventory{st: st} }

// Seen returns each node that sampled a GPU in [from, to]: its cluster, its
// card type (empty when its samples name more than one) and its distinct GPU
// indices (a MIG-partitioned GPU counts once).
func (s *StoreInventory) Seen(ctx context.Context, from, to time.Time) ([]placement.Seen, error) {
	q := `SELECT cluster, node, if(uniqExact(card) = 1, any(card), '') AS card, uniqExact(gpu_index) AS gpus
FROM ` + s.st.Database() + `.gpu_samples
WHERE ts >= {from:DateTime64(3, 'UTC')} AND ts <= {to:DateTime64(3, 'UTC')}
GROUP BY cluster, node
ORDER BY cluster, node`
	res, err := s.st.Query(ctx, q, store.Params{"from": from.UTC().Format(tsLayout), "to": to.UTC().Format(tsLayout)})
	if err != nil {
		return nil, fmt.Errorf("audit: read the nodes the collectors reported: %w", err)
	}
	rows := store.Read(res, "gpu_samples by node")
	out := make([]placement.Seen, 0, rows.Len())
	for rows.Next() {
		out = append(out, placement.Seen{Cluster: rows.Str("cluster"), Node: rows.Str("node"), Card: rows.Str("card"), GPUs: int(rows.Int("gpus"))})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: read the nodes the collectors reported: %w", err)
	}
	return out, nil
}
