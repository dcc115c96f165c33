package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/gpupool/gpupool/scheduler/engine"
	"github.com/gpupool/gpupool/secure/fileperm"
)

// stateVersion is the version of the job state file's format.
const stateVersion = 1

// savedState is the job state file: the queued and running jobs, so that a
// restarted scheduler has the same queues and knows what runs where.
type savedState struct {
	Version int `json:"version"`
	// Gen is the snapshot's generation: journal lines of another are skipped
	// (journal.go).
	Gen uint64 `json:"gen,omitempty"`
	// Seq is the last place in line handed out.
	Seq  uint64            `json:"seq"`
	Jobs []engine.SavedJob `json:"jobs"`
	// Idem is the idempotency keys remembered (idempotency.go).
	Idem []idemEntry `json:"idem,omitempty"`
	// Audit is submit audit rows not yet known to be in the recorder: recorded
	// again at start (the recorder keeps a row recorded twice once).
	Audit []Action `json:"audit,omitempty"`
	// Outbox is the job events not yet published, Sent how far the outbox was
	// published (outbox.go): a restart publishes the entries past it.
	Outbox []outboxEntry `json:"outbox,omitempty"`
	Sent   uint64        `json:"sent,omitempty"`
}

// readState reads a job state file; a missing one is an empty state.
func readState(path string) (savedState, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return savedState{}, false, nil
	}
	if err != nil {
		return savedState{}, false, err
	}
	var st savedState
	if err := json.Unmarshal(data, &st); err != nil {
		return savedState{}, false, fmt.Errorf("%s: %w", path, err)
	}
	if st.Version != stateVersion {
		return savedState{}, false, fmt.Errorf("%s: version %d, this scheduler reads %d", path, st.Version, stateVersion)
	}
	return st, true, nil
}

// writeFileAtomic writes data to path through a temporary file and a rename, so
// that a crash leaves the old file or the new one, never half of one.
func writeFileAtomic(path string, data []byte) error {
	if err := fileperm.MkdirAll(filepath.Dir(path), nil); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// journalPath is where the journal of the state file at path is kept.
func journalPath(path string) string { return path + ".journal" }

// loadState restores the jobs of the state file and its journal, if one is
// configured, then compacts them into a new snapshot. Call it before the first
// pass.
func (s *Service) loadState() error {
	if s.statePath == "" {
		return nil
	}
	const hint = "(move the file away to start with empty queues)"
	// The jobs say who runs what: the directory and files are the owner's alone
	// (0700, 0600), tightened here, with a warning, if an older start left them open.
	if err := fileperm.MkdirAll(filepath.Dir(s.statePath), s.log); err != nil {
		return fmt.Errorf("scheduler: the job state's directory: %w", err)
	}
	for _, p := range []string{s.statePath, journalPath(s.statePath)} {
		if err := fileperm.Tighten(p, s.log); err != nil {
			return fmt.Errorf("scheduler: %w", err)
		}
	}
	st, ok, err := readState(s.statePath)
	if err != nil {
		return fmt.Errorf("scheduler: read the job state (queued and running jobs): %w %s", err, hint)
	}
	lines, _, torn, err := readJournal(journalPath(s.statePath))
	if err != nil {
		return fmt.Errorf("scheduler: read the job state journal: %w %s", err, hint)
	}
	if torn != "" {
		s.log.Warn("job state journal: last line ignored", "file", journalPath(s.statePath), "why", torn, "lines_kept", len(lines))
	}
	if !ok && len(lines) == 0 {
		return nil
	}
	st = replay(st, lines)
	s.mu.Lock()
	dropped, unplaced := s.engine.Restore(st.Seq, st.Jobs)
	now := s.now()
	for _, e := range st.Idem {
		s.idem.put(e, now)
	}
	s.mu.Unlock()
	if len(dropped) > 0 {
		s.log.Warn("jobs the model no longer allows were not restored", "jobs", dropped)
	}
	if len(unplaced) > 0 {
		s.log.Warn("running jobs restored without their nodes (their saved placement does not fit the model's nodes): their GPUs may be given twice until they end", "jobs", unplaced)
	}
	s.log.Info("job state restored", "jobs", len(st.Jobs)-len(dropped), "journal_lines", len(lines), "file", s.statePath)
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.gen = st.Gen
	// The audit rows are recorded again by Start, the job events published.
	s.unrecorded = st.Audit
	s.metrics.outboxHeld(s.outbox.restore(st.Outbox, st.Sent))
	if err := s.compact(); err != nil {
		return fmt.Errorf("scheduler: write the job state back: %w", err)
	}
	return nil
}

// saveState writes what changed in the jobs since it last ran as a line of the
// journal (journal.go), with the submits' audit rows and idempotency keys, and
// compacts the journal into a new snapshot when it has grown past the snapshot.
// A failure is logged and counted, and the next call writes a whole snapshot:
// nothing changed is ever left out.
func (s *Service) saveState() { _ = s.saveStateErr() }

// saveStateErr is saveState, returning an error when nothing could be written
// (neither the journal line nor a snapshot).
func (s *Service) saveStateErr() error {
	if s.statePath == "" {
		return nil
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if s.jrnl == nil || s.mustCompact {
		return s.compactOrLog()
	}
	s.mu.Lock()
	jobs, gone, ok := s.engine.TakeDirty(s.lastSeq)
	line := journalLine{Gen: s.gen, Seq: s.lastSeq}
	if ok {
		line.Seq, line.Jobs, line.Gone = s.engine.Seq(), jobs, gone
	}
	audit, idem, events := s.takePending()
	s.mu.Unlock()
	if !ok && len(audit) == 0 && len(idem) == 0 && len(events) == 0 {
		return nil
	}
	line.Audit, line.Idem, line.Sent = audit, idem, s.outbox.doneN()
	var entry *outboxEntry
	if len(events) > 0 {
		entry = &outboxEntry{N: s.outbox.nextN(), Events: events}
		line.Outbox = []outboxEntry{*entry}
	}
	data, err := json.Marshal(line)
	if err == nil {
		err = s.jrnl.append(append(data, '\n'))
	}
	if err != nil {
		s.countRecordErr()
		s.log.Warn("write the job state journal; writing a whole snapshot instead", "file", s.jrnl.path, "err", err)
		s.mu.Lock()
		s.putBack(audit, events)
		s.mu.Unlock()
		s.mustCompact = true
		return s.compactOrLog()
	}
	s.lastSeq = line.Seq
	s.auditMu.Lock()
	s.unrecorded = append(s.unrecorded, audit...)
	s.auditMu.Unlock()
	if entry != nil {
		s.pushOutbox(*entry)
	}
	if s.jrnl.size > max(s.snapSize, minCompactBytes) {
		_ = s.compactOrLog() // the line is durable: a failed compaction loses nothing
	}
	return nil
}

func (s *Service) compactOrLog() error {
	err := s.compact()
	if err != nil {
		s.countRecordErr()
		s.log.Warn("write the job state", "file", s.statePath, "err", err)
		return fmt.Errorf("%w: %s: %w", ErrNotDurable, s.statePath, err)
	}
	return nil
}

// compact writes the whole state as the next generation's snapshot, then
// empties the journal. Call with saveMu held.
func (s *Service) compact() error {
	s.mustCompact = true // until the snapshot is written: the changes taken now are in nothing else
	s.mu.Lock()
	s.engine.TakeDirty(0) // all in the snapshot
	st := savedState{Version: stateVersion, Seq: s.engine.Seq(), Jobs: s.engine.Saved()}
	audit, _, events := s.takePending()
	st.Idem = s.idem.entries(s.now())
	s.mu.Unlock()
	st.Gen = s.gen + 1
	s.auditMu.Lock()
	st.Audit = append(slices.Clone(s.unrecorded), audit...)
	s.auditMu.Unlock()
	st.Outbox, st.Sent = s.outbox.state()
	var entry *outboxEntry
	if len(events) > 0 {
		entry = &outboxEntry{N: s.outbox.nextN(), Events: events}
		st.Outbox = append(st.Outbox, *entry)
	}
	data, err := json.Marshal(st)
	if err == nil {
		err = writeFileAtomic(s.statePath, data)
	}
	if err != nil {
		s.mu.Lock()
		s.putBack(audit, events)
		s.mu.Unlock()
		return fmt.Errorf("write the job state: %w", err)
	}
	s.auditMu.Lock()
	s.unrecorded = append(s.unrecorded, audit...) // st.Audit, and any recorded meanwhile gone
	s.auditMu.Unlock()
	if entry != nil {
		s.pushOutbox(*entry)
	}
	s.gen, s.lastSeq, s.snapSize, s.mustCompact = st.Gen, st.Seq, int64(len(data)), false
	if s.jrnl == nil {
		// Lines left of an older generation are skipped; cut them anyway.
		j, err := openJournal(journalPath(s.statePath), 0)
		if err != nil {
			return fmt.Errorf("open the job state journal: %w", err)
		}
		s.jrnl = j
		return nil
	}
	return s.jrnl.reset()
}

func (s *Service) countRecordErr() {
	if s.metrics != nil {
		s.metrics.inc(recordErrs)
	}
}
