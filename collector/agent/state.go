package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gpupool/gpupool/secure/fileperm"
)

// nonceFile is the agent's record of accepted commands in its state_dir.
const nonceFile = "commands.jsonl"

// nonceRecord is one line of nonceFile: a command the agent accepted, kept until
// it goes stale (IssuedMs + max_skew).
type nonceRecord struct {
	Nonce    string `json:"nonce"`
	ID       string `json:"id"`
	IssuedMs int64  `json:"issued_ms"`
}

// nonceLog keeps the nonces of accepted commands on disk, written and synced
// before the command is carried out: an agent that restarts (a new process, the
// same state_dir) refuses a replay of a command its predecessor accepted. The
// file is 0600 in a 0700 directory. It is not safe for concurrent use; the agent
// calls it with its mutex held.
type nonceLog struct {
	path  string
	f     *os.File
	lines int // records in the file, live or stale
	log   *slog.Logger
}

// openNonceLog reads the record in dir (made 0700 if need be) and returns it with
// the nonces still fresh at now, each with when its command goes stale; the file
// is rewritten with those alone. A line that cannot be read (the last one, cut
// short by a crash before it was synced: that command was never carried out) is
// skipped and logged.
func openNonceLog(dir string, now time.Time, maxSkew time.Duration, log *slog.Logger) (*nonceLog, map[string]time.Time, error) {
	if err := fileperm.MkdirAll(dir, log); err != nil {
		return nil, nil, fmt.Errorf("state_dir: %w", err)
	}
	l := &nonceLog{path: filepath.Join(dir, nonceFile), log: log}
	live := map[string]time.Time{}
	var keep []nonceRecord
	data, err := os.ReadFile(l.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("state_dir: read %s: %w", l.path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r nonceRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Nonce == "" {
			log.Warn("unreadable line in the agent's command record skipped", "file", l.path, "line", n)
			continue
		}
		stale := time.UnixMilli(r.IssuedMs).Add(maxSkew)
		if _, dup := live[r.Nonce]; dup || !now.Before(stale) {
			continue
		}
		live[r.Nonce] = stale
		keep = append(keep, r)
	}
	if err := l.rewrite(keep); err != nil {
		return nil, nil, err
	}
	return l, live, nil
}

// add records an accepted command and syncs it to disk.
func (l *nonceLog) add(r nonceRecord) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("record command %s in %s: %w", r.ID, l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("record command %s in %s: sync: %w", r.ID, l.path, err)
	}
	l.lines++
	return nil
}

// rewrite replaces the file with records (those still fresh), atomically, and
// reopens it for appending.
func (l *nonceLog) rewrite(records []nonceRecord) error {
	var buf bytes.Buffer
	for _, r := range records {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		buf.Write(append(line, '\n'))
	}
	tmp := l.path + ".tmp"
	f, err := fileperm.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, l.log)
	if err != nil {
		return fmt.Errorf("state_dir: %w", err)
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err != nil {
		return fmt.Errorf("state_dir: write %s: %w", l.path, err)
	}
	if d, err := os.Open(filepath.Dir(l.path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	if l.f != nil {
		_ = l.f.Close()
	}
	if l.f, err = fileperm.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, l.log); err != nil {
		return fmt.Errorf("state_dir: %w", err)
	}
	l.lines = len(records)
	return nil
}

// compact rewrites the file with the live nonces (each with when its command
// goes stale) once stale records outnumber them.
func (l *nonceLog) compact(live map[string]time.Time, maxSkew time.Duration) {
	if l.lines < 2*len(live)+256 {
		return
	}
	records := make([]nonceRecord, 0, len(live))
	for n, stale := range live {
		records = append(records, nonceRecord{Nonce: n, IssuedMs: ceilMs(stale.Add(-maxSkew))})
	}
	if err := l.rewrite(records); err != nil {
		l.log.Warn("compacting the agent's command record", "file", l.path, "err", err)
	}
}

func (l *nonceLog) close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// ceilMs is t in ms since the epoch, rounded up: a nonce is never forgotten
// before its command goes stale.
func ceilMs(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return ms
}
