package collector

import (
	"context"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Source reads what one node's GPUs and GPU processes are doing.
type Source interface {
	// Sample appends the node's GPU samples and process samples at time at to b.
	// It does not set b's Cluster, Node, CollectorID or Seq; the collector does.
	Sample(ctx context.Context, at time.Time, b *schemas.SampleBatch) error
}
