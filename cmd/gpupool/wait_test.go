package main

import (
	"testing"
	"time"
)

// waitUntil runs check every 10 ms until it returns nil, and fails the test with
// check's last error once timeout has passed.
func waitUntil(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	expired := time.After(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-tick.C:
		case <-expired:
			t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
		}
	}
}
