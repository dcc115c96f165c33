package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/store"
)

var _ scheduler.FragmentationRecorder = (*StoreRecorder)(nil)

// RecordFragmentation inserts samples into scheduler_fragmentation (migration
// 0025) as one block. The deduplication token is derived from the samples'
// times, clusters and cards, so a retried call stores nothing twice.
func (r *StoreRecorder) RecordFragmentation(ctx context.Context, samples []scheduler.FragmentationSample) error {
	if len(samples) == 0 {
		return nil
	}
	var (
		ts            = store.NewDateTime64Ms("ts")
		cluster, card = store.NewLowCardinalityString("cluster"), store.NewLowCardinalityString("card")
		gpus, free    = store.NewUInt32("gpus"), store.NewUInt32("free")
		stranded      = store.NewUInt32("stranded")
		waiting       = store.NewUInt32("waiting")
		freeNodes     = store.NewUInt32("free_nodes")
		largest       = store.NewUInt32("largest_on_node")
	)
	h := sha256.New()
	for _, x := range samples {
		for _, s := range []string{strconv.FormatInt(x.Time.UnixMilli(), 10), x.Cluster, x.Card} {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		ts.Append(x.Time.UnixMilli())
		cluster.Append(x.Cluster)
		card.Append(x.Card)
		gpus.Append(uint32(x.GPUs))
		free.Append(uint32(x.Free))
		stranded.Append(uint32(x.Stranded))
		waiting.Append(uint32(x.Waiting))
		freeNodes.Append(uint32(x.FreeNodes))
		largest.Append(uint32(x.LargestOnNode))
	}
	b := store.NewBlock(ts, cluster, card, gpus, free, stranded, waiting, freeNodes, largest)
	token := "fragmentation-" + hex.EncodeToString(h.Sum(nil)[:16])
	if err := r.st.Insert(ctx, "scheduler_fragmentation", b, token); err != nil {
		return fmt.Errorf("audit: record %d fragmentation samples: %w", len(samples), err)
	}
	return nil
}
