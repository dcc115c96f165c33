// Package spool is the collector's bounded on-disk queue: while NATS is unreachable
// the collector appends its messages here and keeps sampling; once NATS is back they
// are published in order, before live data.
//
// Layout: a directory of segment files (<first record number>.seg), each a run of
// records [length uint32][crc32 uint32][payload], and a cursor file naming the first
// record not yet acknowledged. A crash loses nothing: a torn record at the tail is
// cut off on open, and records between the cursor and the crash are published again
// (their message IDs let JetStream drop the repeats). Past MaxBytes the oldest
// segment is deleted, its records counted as dropped.
package spool

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gpupool/gpupool/secure/fileperm"
)

// Config configures a spool.
type Config struct {
	// Dir holds the segment files; it is created if missing.
	Dir string `yaml:"dir"`
	// MaxBytes bounds the spool on disk; beyond it the oldest data is dropped.
	MaxBytes int64 `yaml:"max_bytes"`
	// SegmentBytes is the size at which a new segment file starts (default
	// MaxBytes/16, at most 8 MiB): the unit in which old data is dropped.
	SegmentBytes int64 `yaml:"segment_bytes"`
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Dir == "" {
		return errors.New("dir: empty")
	}
	if c.MaxBytes < 64<<10 {
		return fmt.Errorf("max_bytes: %d is below 64 KiB", c.MaxBytes)
	}
	if c.SegmentBytes < 0 || c.SegmentBytes > c.MaxBytes {
		return fmt.Errorf("segment_bytes: %d must be within 0..max_bytes", c.SegmentBytes)
	}
	return nil
}

// Record is one spooled message.
type Record struct {
	Subject string
	MsgID   string
	Data    []byte
}

// ErrCorrupt marks a record whose checksum or framing is wrong.
var ErrCorrupt = errors.New("spool: corrupt record")

const headerLen = 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

type segment struct {
	first   uint64 // record number of its first record
	count   uint64
	bytes   int64
	offsets []int64 // byte offset of each record, for reading by number
}

func (s *segment) path(dir string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d.seg", s.first))
}

// Spool is safe for concurrent use: one appender and one reader at a time.
type Spool struct {
	cfg Config

	mu      sync.Mutex
	segs    []*segment // oldest first
	w       *os.File   // the last segment, open for appending
	wbuf    *bufio.Writer
	head    uint64 // first record not yet acknowledged
	next    uint64 // number the next appended record gets
	dropped uint64
	r       *os.File // reader of the segment holding head
	rseg    uint64
	log     *slog.Logger // nil: no warnings
}

// Option changes how Open opens a spool.
type Option func(*options)

type options struct{ log *slog.Logger }

// WithLogger sets the logger that warns of a spool directory found open to other
// users (default: none).
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// Open opens (or creates) the spool in cfg.Dir, recovering what a previous process
// left. The directory is 0700 and its files 0600: they hold the node's samples.
// A directory found open to group or others is restricted, with a warning.
func Open(cfg Config, opts ...Option) (*Spool, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if cfg.SegmentBytes == 0 {
		cfg.SegmentBytes = min(cfg.MaxBytes/16, 8<<20)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if err := fileperm.MkdirAll(cfg.Dir, o.log); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	s := &Spool{cfg: cfg, log: o.log}
	if err := s.recover(); err != nil {
		return nil, err
	}
	return s, nil
}

// recover scans the segments, cuts a torn tail and reads the cursor.
func (s *Spool) recover() error {
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	var firsts []uint64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".seg") {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(name, ".seg"), 10, 64)
		if err != nil {
			continue
		}
		firsts = append(firsts, n)
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
	for _, first := range firsts {
		seg := &segment{first: first}
		if err := s.scan(seg); err != nil {
			return err
		}
		s.segs = append(s.segs, seg)
	}
	if n := len(s.segs); n > 0 {
		last := s.segs[n-1]
		s.next = last.first + last.count
		s.head = s.segs[0].first
	}
	if cur, err := os.ReadFile(s.cursorPath()); err == nil {
		if h, err := strconv.ParseUint(strings.TrimSpace(string(cur)), 10, 64); err == nil && h >= s.head && h <= s.next {
			s.head = h
		}
	}
	s.trimAcked()
	return nil
}

// scan reads a segment's record offsets, truncating it after the last whole record.
func (s *Spool) scan(seg *segment) error {
	p := seg.path(s.cfg.Dir)
	f, err := fileperm.OpenFile(p, os.O_RDWR, s.log) // a segment an older release left 0644 is restricted
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var off int64
	var hdr [headerLen]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			break
		}
		n := int64(binary.LittleEndian.Uint32(hdr[:4]))
		sum := binary.LittleEndian.Uint32(hdr[4:])
		payload := make([]byte, n)
		if _, err := io.ReadFull(br, payload); err != nil || crc32.Checksum(payload, crcTable) != sum {
			break
		}
		seg.offsets = append(seg.offsets, off)
		off += headerLen + n
	}
	seg.count = uint64(len(seg.offsets))
	seg.bytes = off
	if err := f.Truncate(off); err != nil {
		return fmt.Errorf("spool: truncate torn tail of %s: %w", p, err)
	}
	return nil
}

func (s *Spool) cursorPath() string { return filepath.Join(s.cfg.Dir, "cursor") }

// Len returns the number of records not yet acknowledged.
func (s *Spool) Len() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next - s.head
}

// Bytes returns the spool's size on disk.
func (s *Spool) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b int64
	for _, seg := range s.segs {
		b += seg.bytes
	}
	return b
}

// Dropped returns how many records were dropped to stay within MaxBytes since Open.
func (s *Spool) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

func encodeRecord(r Record) []byte {
	payload := make([]byte, 0, 8+len(r.Subject)+len(r.MsgID)+len(r.Data))
	payload = binary.AppendUvarint(payload, uint64(len(r.Subject)))
	payload = append(payload, r.Subject...)
	payload = binary.AppendUvarint(payload, uint64(len(r.MsgID)))
	payload = append(payload, r.MsgID...)
	payload = append(payload, r.Data...)
	return payload
}

// decodeRecord reads what encodeRecord wrote; a length that is not in its
// shortest form, or runs past the payload, is ErrCorrupt (encodeRecord never
// writes one, so the record would not be the one appended).
func decodeRecord(payload []byte) (Record, error) {
	var r Record
	length := func(b []byte) (uint64, int, bool) {
		n, k := binary.Uvarint(b)
		return n, k, k > 0 && k == len(binary.AppendUvarint(nil, n)) && uint64(len(b)-k) >= n
	}
	n, k, ok := length(payload)
	if !ok {
		return r, ErrCorrupt
	}
	r.Subject = string(payload[k : k+int(n)])
	payload = payload[k+int(n):]
	n, k, ok = length(payload)
	if !ok {
		return r, ErrCorrupt
	}
	r.MsgID = string(payload[k : k+int(n)])
	r.Data = append([]byte(nil), payload[k+int(n):]...)
	return r, nil
}

// Append adds a record at the tail and returns how many old records were dropped to
// make room. The record is written through to the OS (not fsynced: a power loss may
// lose the last records, a process crash does not).
func (s *Spool) Append(r Record) (dropped uint64, err error) {
	payload := encodeRecord(r)
	if int64(len(payload))+headerLen > s.cfg.SegmentBytes {
		return 0, fmt.Errorf("spool: record of %d bytes exceeds segment_bytes %d", len(payload), s.cfg.SegmentBytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensureWriter(int64(len(payload)) + headerLen); err != nil {
		return 0, err
	}
	var hdr [headerLen]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hdr[4:], crc32.Checksum(payload, crcTable))
	last := s.segs[len(s.segs)-1]
	if _, err := s.wbuf.Write(hdr[:]); err != nil {
		return 0, fmt.Errorf("spool: append: %w", err)
	}
	if _, err := s.wbuf.Write(payload); err != nil {
		return 0, fmt.Errorf("spool: append: %w", err)
	}
	if err := s.wbuf.Flush(); err != nil {
		return 0, fmt.Errorf("spool: append: %w", err)
	}
	last.offsets = append(last.offsets, last.bytes)
	last.bytes += headerLen + int64(len(payload))
	last.count++
	s.next++
	return s.enforceLimit(), nil
}

// ensureWriter opens the last segment for appending, starting a new one when the
// record would not fit.
func (s *Spool) ensureWriter(need int64) error {
	if n := len(s.segs); n > 0 && s.w != nil && s.segs[n-1].bytes+need <= s.cfg.SegmentBytes {
		return nil
	}
	if n := len(s.segs); n > 0 && s.w == nil && s.segs[n-1].bytes+need <= s.cfg.SegmentBytes {
		f, err := os.OpenFile(s.segs[n-1].path(s.cfg.Dir), os.O_WRONLY|os.O_APPEND, fileperm.File)
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		s.w, s.wbuf = f, bufio.NewWriterSize(f, 64<<10)
		return nil
	}
	if s.w != nil {
		_ = s.w.Close()
		s.w = nil
	}
	seg := &segment{first: s.next}
	f, err := os.OpenFile(seg.path(s.cfg.Dir), os.O_WRONLY|os.O_CREATE|os.O_APPEND, fileperm.File)
	if err != nil {
		return fmt.Errorf("spool: new segment: %w", err)
	}
	s.segs = append(s.segs, seg)
	s.w, s.wbuf = f, bufio.NewWriterSize(f, 64<<10)
	return nil
}

// enforceLimit deletes the oldest segments while the spool exceeds MaxBytes (never
// the one being written).
func (s *Spool) enforceLimit() uint64 {
	var total int64
	for _, seg := range s.segs {
		total += seg.bytes
	}
	var dropped uint64
	for total > s.cfg.MaxBytes && len(s.segs) > 1 {
		old := s.segs[0]
		lost := uint64(0)
		if end := old.first + old.count; end > s.head {
			lost = end - max(s.head, old.first)
			s.head = end
		}
		s.closeReader(old.first)
		_ = os.Remove(old.path(s.cfg.Dir))
		total -= old.bytes
		s.segs = s.segs[1:]
		dropped += lost
	}
	s.dropped += dropped
	return dropped
}

func (s *Spool) closeReader(first uint64) {
	if s.r != nil && s.rseg == first {
		_ = s.r.Close()
		s.r = nil
	}
}

// Peek returns the oldest record not yet acknowledged and its number, or ok=false
// when the spool is empty.
func (s *Spool) Peek() (rec Record, num uint64, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head >= s.next {
		return rec, 0, false, nil
	}
	seg := s.segFor(s.head)
	if seg == nil {
		return rec, 0, false, fmt.Errorf("%w: no segment holds record %d", ErrCorrupt, s.head)
	}
	if s.r == nil || s.rseg != seg.first {
		s.closeReader(s.rseg)
		f, err := os.Open(seg.path(s.cfg.Dir))
		if err != nil {
			return rec, 0, false, fmt.Errorf("spool: %w", err)
		}
		s.r, s.rseg = f, seg.first
	}
	if s.w != nil {
		if err := s.wbuf.Flush(); err != nil {
			return rec, 0, false, fmt.Errorf("spool: %w", err)
		}
	}
	off := seg.offsets[s.head-seg.first]
	var hdr [headerLen]byte
	if _, err := s.r.ReadAt(hdr[:], off); err != nil {
		return rec, 0, false, fmt.Errorf("spool: read record %d: %w", s.head, err)
	}
	payload := make([]byte, binary.LittleEndian.Uint32(hdr[:4]))
	if _, err := s.r.ReadAt(payload, off+headerLen); err != nil {
		return rec, 0, false, fmt.Errorf("spool: read record %d: %w", s.head, err)
	}
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(hdr[4:]) {
		return rec, 0, false, fmt.Errorf("%w: record %d fails its checksum", ErrCorrupt, s.head)
	}
	rec, err = decodeRecord(payload)
	return rec, s.head, err == nil, err
}

func (s *Spool) segFor(num uint64) *segment {
	for _, seg := range s.segs {
		if num >= seg.first && num < seg.first+seg.count {
			return seg
		}
	}
	return nil
}

// Ack marks record num (the one Peek returned) as delivered, persists the cursor and
// deletes segments that hold only delivered records. Acking a record already dropped
// or acknowledged is a no-op.
func (s *Spool) Ack(num uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if num != s.head {
		return nil
	}
	s.head++
	if err := fileperm.WriteFile(s.cursorPath()+".tmp", []byte(strconv.FormatUint(s.head, 10)), s.log); err != nil {
		return fmt.Errorf("spool: cursor: %w", err)
	}
	if err := os.Rename(s.cursorPath()+".tmp", s.cursorPath()); err != nil {
		return fmt.Errorf("spool: cursor: %w", err)
	}
	s.trimAcked()
	return nil
}

// trimAcked deletes fully delivered segments, except the one being written.
func (s *Spool) trimAcked() {
	for len(s.segs) > 1 && s.segs[0].first+s.segs[0].count <= s.head {
		s.closeReader(s.segs[0].first)
		_ = os.Remove(s.segs[0].path(s.cfg.Dir))
		s.segs = s.segs[1:]
	}
	if len(s.segs) == 1 && s.segs[0].first+s.segs[0].count <= s.head && s.head == s.next {
		// Everything delivered: start the next segment afresh.
		if s.w != nil {
			_ = s.w.Close()
			s.w = nil
		}
		s.closeReader(s.segs[0].first)
		_ = os.Remove(s.segs[0].path(s.cfg.Dir))
		s.segs = nil
	}
}

// Close closes the files; the spool's contents stay for the next Open.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if s.w != nil {
		err = s.wbuf.Flush()
		err = errors.Join(err, s.w.Close())
		s.w = nil
	}
	if s.r != nil {
		_ = s.r.Close()
		s.r = nil
	}
	return err
}
