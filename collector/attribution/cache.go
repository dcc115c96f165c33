package attribution

import (
	"sync"
	"sync/atomic"

	"github.com/gpupool/gpupool/collector"
)

// entry is one attributed process. Every field but lastSeen is fixed when the entry
// is made; a new attribution replaces the entry.
type entry struct {
	// statPath is <proc root>/<pid>/stat, kept so a cache hit builds no string.
	statPath string
	// startTicks is the process's start time (clock ticks since boot): a PID whose
	// start time differs is another process.
	startTicks uint64
	info       collector.JobInfo
	// expiresNs is when the attribution is read again (Unix ns).
	expiresNs int64
	// lastSeenNs is when the entry was last asked for (Unix ns).
	lastSeenNs atomic.Int64
	// checkedNs is when the process's start time was last compared (Unix ns).
	checkedNs atomic.Int64
}

// pidCache maps PIDs to their attribution; safe for concurrent use.
type pidCache struct {
	mu          sync.RWMutex
	entries     map[uint32]*entry
	lastSweepNs int64 // guarded by mu
}

func newPIDCache() *pidCache {
	return &pidCache{entries: make(map[uint32]*entry)}
}

func (c *pidCache) get(pid uint32) *entry {
	c.mu.RLock()
	e := c.entries[pid]
	c.mu.RUnlock()
	return e
}

func (c *pidCache) put(pid uint32, e *entry) {
	c.mu.Lock()
	c.entries[pid] = e
	c.mu.Unlock()
}

// drop removes pid's entry if it is still e (a concurrent attribution may have
// replaced it).
func (c *pidCache) drop(pid uint32, e *entry) {
	c.mu.Lock()
	if c.entries[pid] == e {
		delete(c.entries, pid)
	}
	c.mu.Unlock()
}

// retain drops every entry whose PID is not in alive and returns how many it
// dropped.
func (c *pidCache) retain(alive []uint32) int {
	keep := make(map[uint32]struct{}, len(alive))
	for _, pid := range alive {
		keep[pid] = struct{}{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for pid := range c.entries {
		if _, ok := keep[pid]; !ok {
			delete(c.entries, pid)
			n++
		}
	}
	return n
}

// sweep drops entries not asked for since nowNs-idleNs, at most once per idleNs/2,
// and returns how many it dropped.
func (c *pidCache) sweep(nowNs, idleNs int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nowNs-c.lastSweepNs < idleNs/2 {
		return 0
	}
	c.lastSweepNs = nowNs
	n := 0
	for pid, e := range c.entries {
		if nowNs-e.lastSeenNs.Load() > idleNs {
			delete(c.entries, pid)
			n++
		}
	}
	return n
}

func (c *pidCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
