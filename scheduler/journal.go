package scheduler

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/gpupool/gpupool/scheduler/engine"
	"github.com/gpupool/gpupool/secure/fileperm"
)

// The job state is a snapshot (the state file, savedState) and a journal beside
// it (<state file>.journal): one JSON line per change, appended and fsync'd
// before the submit or finish that made it returns, so that a submit costs one
// job's line however long the queues are. A line holds the jobs changed since
// the last (each in full) and those gone; replaying the lines over the snapshot
// gives the state. When the journal grows past the snapshot's size (and
// minCompactBytes), the state is written as a new snapshot and the journal
// emptied.
//
// Crash safety: a snapshot carries a generation, and each journal line the
// generation of the snapshot it follows; a compaction writes the next
// generation's snapshot (atomically, by rename) and only then empties the
// journal, so a crash in between leaves lines of the old generation, which are
// skipped. A torn last line (a crash during the append) is ignored with a
// warning; a bad line before good ones is corruption, and Start refuses it.

// minCompactBytes keeps a small state from being rewritten every few changes.
const minCompactBytes = 256 << 10

// journalLine is one line of the journal.
type journalLine struct {
	// Gen is the generation of the snapshot this line follows.
	Gen uint64 `json:"gen"`
	// Seq is the engine's last place in line.
	Seq  uint64            `json:"seq"`
	Jobs []engine.SavedJob `json:"jobs,omitempty"`
	Gone []string          `json:"gone,omitempty"`
	// Audit is the submit audit rows of the jobs in this line, Idem their
	// idempotency keys: written with the jobs, so that a crash leaves no job
	// without its row and its caller's key.
	Audit []Action    `json:"audit,omitempty"`
	Idem  []idemEntry `json:"idem,omitempty"`
	// Outbox is the job events of the changes in this line (outbox.go), Sent
	// how far the outbox was published when it was written: a line of Sent
	// alone is the marker written after a publish.
	Outbox []outboxEntry `json:"outbox,omitempty"`
	Sent   uint64        `json:"sent,omitempty"`
}

// replay applies journal lines of generation st.Gen to st, in order.
func replay(st savedState, lines []journalLine) savedState {
	idx := make(map[string]int, len(st.Jobs))
	for i, j := range st.Jobs {
		idx[j.ID] = i
	}
	gone := map[string]bool{}
	for _, l := range lines {
		if l.Gen != st.Gen {
			continue
		}
		st.Seq = max(st.Seq, l.Seq)
		st.Audit = append(st.Audit, l.Audit...)
		st.Idem = append(st.Idem, l.Idem...)
		st.Outbox = append(st.Outbox, l.Outbox...)
		st.Sent = max(st.Sent, l.Sent)
		for _, j := range l.Jobs {
			delete(gone, j.ID)
			if i, ok := idx[j.ID]; ok {
				st.Jobs[i] = j
				continue
			}
			idx[j.ID] = len(st.Jobs)
			st.Jobs = append(st.Jobs, j)
		}
		for _, id := range l.Gone {
			if _, ok := idx[id]; ok {
				gone[id] = true
			}
		}
	}
	if len(gone) > 0 {
		st.Jobs = slices.DeleteFunc(st.Jobs, func(j engine.SavedJob) bool { return gone[j.ID] })
	}
	slices.SortFunc(st.Jobs, func(a, b engine.SavedJob) int { return cmp.Compare(a.Seq, b.Seq) })
	st.Outbox = slices.DeleteFunc(st.Outbox, func(e outboxEntry) bool { return e.N <= st.Sent })
	return st
}

// readJournal reads the journal at path (a missing one is empty). A last line
// that is torn (no newline, or not JSON) is left out and reported in torn; a
// bad line before the last is an error. good is the length of the lines kept.
func readJournal(path string) (lines []journalLine, good int64, torn string, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, "", nil
	}
	if err != nil {
		return nil, 0, "", err
	}
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		var l journalLine
		if i < 0 || json.Unmarshal(data[:i], &l) != nil {
			if i < 0 || len(bytes.TrimSpace(data[i+1:])) == 0 {
				return lines, good, fmt.Sprintf("line %d (%d bytes) is incomplete: a crash during its write", n, len(data)), nil
			}
			return nil, 0, "", fmt.Errorf("%s: line %d is not a journal entry, and more follow", path, n)
		}
		lines = append(lines, l)
		good += int64(i + 1)
		data = data[i+1:]
	}
	return lines, good, "", nil
}

// journal is the open journal file.
type journal struct {
	path string
	f    *os.File
	size int64
}

func openJournal(path string, size int64) (*journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, fileperm.File)
	if err != nil {
		return nil, err
	}
	// Cut a torn tail away, so that the next line starts on a line of its own.
	if err := f.Truncate(size); err != nil {
		_ = f.Close()
		return nil, err
	}
	if _, err := f.Seek(size, 0); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &journal{path: path, f: f, size: size}, nil
}

// append writes one line and syncs it to disk.
func (j *journal) append(data []byte) error { return j.write(data, true) }

// write writes one line, and syncs it to disk if sync.
func (j *journal) write(data []byte, sync bool) error {
	n, err := j.f.Write(data)
	if err == nil && sync {
		err = j.f.Sync()
	}
	if err != nil {
		// Leave no partial line for the next to join: cut back to the last good one.
		_ = j.f.Truncate(j.size)
		_, _ = j.f.Seek(j.size, 0)
		return fmt.Errorf("append to %s: %w", j.path, err)
	}
	j.size += int64(n)
	return nil
}

// reset empties the journal once a snapshot holds everything.
func (j *journal) reset() error {
	if err := j.f.Truncate(0); err != nil {
		return err
	}
	if _, err := j.f.Seek(0, 0); err != nil {
		return err
	}
	j.size = 0
	return j.f.Sync()
}
