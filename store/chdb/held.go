package chdb

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// HeldError names the process holding a data path that could not be opened
// (ErrStoreHeld): its PID, as the engine writes it into the path's status file,
// and its command line from /proc.
type HeldError struct {
	// Path is the data path.
	Path string
	// PID is the holder's process ID (0: the status file does not say).
	PID int
	// Command is its command line, arguments separated by blanks ("": not
	// readable).
	Command string
}

func (e *HeldError) Error() string {
	who := "another process"
	switch {
	case e.PID > 0 && e.Command != "":
		who = fmt.Sprintf("PID %d (%s)", e.PID, e.Command)
	case e.PID > 0:
		who = fmt.Sprintf("PID %d", e.PID)
	}
	stop := "stop it first"
	if e.PID > 0 {
		stop = fmt.Sprintf("stop it first (Ctrl-C where it runs, or kill %d)", e.PID)
	}
	return fmt.Sprintf("embedded store: %s holds %s, and the embedded store opens in one process at a time: %s, then run this again", who, e.Path, stop)
}

// Unwrap makes errors.Is(err, ErrStoreHeld) hold.
func (e *HeldError) Unwrap() error { return ErrStoreHeld }

// heldByOther says whether another process holds path, and which.
func heldByOther(path string) (*HeldError, bool) {
	if !pathHeld(path) {
		return nil, false
	}
	h := heldBy(path)
	return h, h.PID != os.Getpid()
}

// heldBy reads the holder of path from its status file ("PID: <n>" on a line)
// and /proc/<n>/cmdline.
func heldBy(path string) *HeldError {
	e := &HeldError{Path: path}
	data, err := os.ReadFile(statusFile(path))
	if err != nil {
		return e
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "PID:"); ok {
			e.PID, _ = strconv.Atoi(strings.TrimSpace(v))
			break
		}
	}
	if e.PID > 0 {
		if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", e.PID)); err == nil {
			e.Command = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return e
}
