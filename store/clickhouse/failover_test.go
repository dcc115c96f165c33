package clickhouse

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// dropper is a TCP server that accepts connections and drops them at once, as a
// ClickHouse server going down does; it records the order it was reached in.
type dropper struct {
	l     net.Listener
	order *[]string
	mu    *sync.Mutex
}

func newDropper(t *testing.T, order *[]string, mu *sync.Mutex) *dropper {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &dropper{l: l, order: order, mu: mu}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			d.mu.Lock()
			*d.order = append(*d.order, l.Addr().String())
			d.mu.Unlock()
			_ = c.Close()
		}
	}()
	return d
}

// TestOpenFailsOverAcrossAddresses gives Open three addresses: one that drops
// every connection, one where nothing listens, and another that drops: it must
// try them in order, each of them, and fail naming them all, not stop at the
// first (ingest against several --clickhouse-addr relies on this to reach the
// servers that are up).
func TestOpenFailsOverAcrossAddresses(t *testing.T) {
	var mu sync.Mutex
	var order []string
	first := newDropper(t, &order, &mu)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	_ = closed.Close()
	last := newDropper(t, &order, &mu)

	cfg := DefaultConfig()
	cfg.Addr = []string{first.l.Addr().String(), refused, last.l.Addr().String()}
	cfg.DialTimeout = 2 * time.Second
	_, err = Open(t.Context(), cfg)
	if err == nil {
		t.Fatal("Open succeeded with no server answering")
	}
	if !strings.Contains(err.Error(), strings.Join(cfg.Addr, ",")) {
		t.Errorf("error %q does not name every address", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) < 2 || order[0] != first.l.Addr().String() {
		t.Fatalf("connections reached %v: want the first address first, then the others", order)
	}
	sawLast := false
	for _, a := range order {
		sawLast = sawLast || a == last.l.Addr().String()
	}
	if !sawLast {
		t.Errorf("connections reached %v: the last address was never tried after the first dropped", order)
	}
}
