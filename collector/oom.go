package collector

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrBadMemoryEvents says a cgroup v2 memory.events file is not in its format.
var ErrBadMemoryEvents = errors.New("bad memory.events")

// memoryEvents is what the collector reads of a cgroup v2 memory.events file:
// the number of processes of the cgroup (and its children) the kernel's OOM
// killer killed, and how often the cgroup hit its limit and the OOM killer ran.
type memoryEvents struct {
	OOM     uint64
	OOMKill uint64
}

// parseMemoryEvents reads memory.events: "<key> <count>" lines (low, high, max,
// oom, oom_kill, oom_group_kill, …). Keys it does not know are skipped; a line not
// in that form, a count that is not a number, or a file without oom_kill (not a
// cgroup v2 memory controller's) is an error wrapping ErrBadMemoryEvents.
func parseMemoryEvents(data []byte) (memoryEvents, error) {
	var ev memoryEvents
	sawKill := false
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		if len(line) == 0 {
			continue
		}
		key, val, ok := bytes.Cut(line, []byte{' '})
		if !ok || len(key) == 0 {
			return memoryEvents{}, fmt.Errorf("%w: line %d %q: want <key> <count>", ErrBadMemoryEvents, n, clipLine(line))
		}
		v, err := strconv.ParseUint(string(val), 10, 64)
		if err != nil {
			return memoryEvents{}, fmt.Errorf("%w: line %d %q: %q is not a count", ErrBadMemoryEvents, n, clipLine(line), clipLine(val))
		}
		switch string(key) {
		case "oom":
			ev.OOM = v
		case "oom_kill":
			ev.OOMKill, sawKill = v, true
		}
	}
	if !sawKill {
		return memoryEvents{}, fmt.Errorf("%w: no oom_kill line (is this cgroup v2's memory.events?)", ErrBadMemoryEvents)
	}
	return ev, nil
}

func clipLine(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// readMemoryEvents reads <root><cgroup>/memory.events. A cgroup that is gone
// (the job's last process has exited and its runtime removed it) gives an error
// wrapping fs.ErrNotExist.
func readMemoryEvents(root, cgroup string) (memoryEvents, error) {
	if !strings.HasPrefix(cgroup, "/") || strings.Contains(cgroup, "/../") || strings.HasSuffix(cgroup, "/..") {
		return memoryEvents{}, fmt.Errorf("cgroup %q: not an absolute path below the cgroup root", cgroup)
	}
	path := filepath.Join(root, filepath.FromSlash(cgroup), "memory.events")
	data, err := os.ReadFile(path)
	if err != nil {
		return memoryEvents{}, err
	}
	ev, err := parseMemoryEvents(data)
	if err != nil {
		return memoryEvents{}, fmt.Errorf("%s: %w", path, err)
	}
	return ev, nil
}

// isGone reports whether err says the cgroup no longer exists.
func isGone(err error) bool { return errors.Is(err, fs.ErrNotExist) }
