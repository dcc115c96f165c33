package api

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gpupool/gpupool/scheduler"
)

// SubmitRetrying submits spec under the idempotency key (a new one when ""),
// retrying up to retries times, 0.5 s, 1 s, 2 s… apart, while the error is
// Retryable: the scheduler queues the job once whatever the tries. A retryable
// error left at the end names the key to retry with.
func (c *Client) SubmitRetrying(ctx context.Context, spec scheduler.JobSpec, key string, retries int) (scheduler.Job, error) {
	if key == "" {
		key = NewIdempotencyKey()
	}
	j, err := c.SubmitOnce(ctx, spec, key)
	for try := 0; err != nil && Retryable(err) && try < retries; try++ {
		select {
		case <-ctx.Done():
			return j, fmt.Errorf("submit: %w", ctx.Err())
		case <-time.After(time.Duration(500<<try) * time.Millisecond):
		}
		j, err = c.SubmitOnce(ctx, spec, key)
	}
	if err != nil && Retryable(err) {
		return j, fmt.Errorf("submit (the scheduler may have queued it: retry with --idempotency-key %s to get that job, not a second one): %w", key, err)
	}
	if err != nil {
		return j, fmt.Errorf("submit: %w", err)
	}
	return j, nil
}

// WriteSubmitted says on w that j was submitted, and how to follow it.
func WriteSubmitted(w io.Writer, j scheduler.Job) error {
	_, err := fmt.Fprintf(w, "submitted %s to queue %s (pool %s, priority %d); follow it with: gpupool jobs ls --queue %s\n",
		j.ID, j.Spec.Queue, j.Pool, j.Priority, j.Spec.Queue)
	return err
}
