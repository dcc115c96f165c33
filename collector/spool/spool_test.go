package spool

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func rec(i int) Record {
	return Record{Subject: "gpupool.samples.c.n", MsgID: fmt.Sprintf("id-%d", i), Data: []byte(fmt.Sprintf("payload %d %0100d", i, i))}
}

func mustOpen(t *testing.T, cfg Config) *Spool {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// drainAll peeks and acks everything, returning the message IDs in order.
func drainAll(t *testing.T, s *Spool) []string {
	t.Helper()
	var ids []string
	for {
		r, n, ok, err := s.Peek()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ids
		}
		ids = append(ids, r.MsgID)
		if err := s.Ack(n); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAppendPeekAckInOrder(t *testing.T) {
	s := mustOpen(t, Config{Dir: t.TempDir(), MaxBytes: 1 << 20, SegmentBytes: 1024})
	for i := 0; i < 50; i++ {
		if _, err := s.Append(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Len() != 50 {
		t.Fatalf("Len = %d", s.Len())
	}
	r, n, ok, err := s.Peek()
	if err != nil || !ok || r.MsgID != "id-0" || r.Subject != "gpupool.samples.c.n" || string(r.Data) != string(rec(0).Data) {
		t.Fatalf("Peek = %+v %d %v %v", r, n, ok, err)
	}
	ids := drainAll(t, s)
	if len(ids) != 50 || ids[0] != "id-0" || ids[49] != "id-49" {
		t.Fatalf("drained %v", ids)
	}
	if s.Len() != 0 || s.Bytes() != 0 {
		t.Errorf("after draining: len %d bytes %d", s.Len(), s.Bytes())
	}
	// Appending after a full drain works.
	if _, err := s.Append(rec(50)); err != nil {
		t.Fatal(err)
	}
	if ids := drainAll(t, s); len(ids) != 1 || ids[0] != "id-50" {
		t.Fatalf("after refill: %v", ids)
	}
}

func TestSurvivesRestart(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxBytes: 1 << 20, SegmentBytes: 2048}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if _, err := s.Append(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 15; i++ {
		_, n, _, _ := s.Peek()
		if err := s.Ack(n); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Close()

	s2 := mustOpen(t, cfg)
	if s2.Len() != 25 {
		t.Fatalf("after restart Len = %d, want 25", s2.Len())
	}
	for i := 40; i < 45; i++ {
		if _, err := s2.Append(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	ids := drainAll(t, s2)
	if len(ids) != 30 || ids[0] != "id-15" || ids[29] != "id-44" {
		t.Fatalf("after restart drained %d: first %v last %v", len(ids), ids[0], ids[len(ids)-1])
	}
}

func TestTornTailIsCut(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxBytes: 1 << 20}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Append(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Close()
	// A crash in the middle of writing a record leaves half a record.
	segs, _ := filepath.Glob(filepath.Join(cfg.Dir, "*.seg"))
	f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, 'x', 'y'})
	_ = f.Close()

	s2 := mustOpen(t, cfg)
	if _, err := s2.Append(rec(3)); err != nil {
		t.Fatal(err)
	}
	ids := drainAll(t, s2)
	if fmt.Sprint(ids) != "[id-0 id-1 id-2 id-3]" {
		t.Fatalf("after a torn tail: %v", ids)
	}
}

func TestBoundDropsOldest(t *testing.T) {
	s := mustOpen(t, Config{Dir: t.TempDir(), MaxBytes: 64 << 10, SegmentBytes: 4 << 10})
	var dropped uint64
	for i := 0; i < 2000; i++ {
		d, err := s.Append(rec(i))
		if err != nil {
			t.Fatal(err)
		}
		dropped += d
	}
	if s.Bytes() > 64<<10 {
		t.Errorf("spool holds %d bytes, bound is %d", s.Bytes(), 64<<10)
	}
	if dropped == 0 || dropped != s.Dropped() {
		t.Fatalf("dropped %d (Dropped() %d), want > 0 and equal", dropped, s.Dropped())
	}
	ids := drainAll(t, s)
	if uint64(len(ids))+dropped != 2000 {
		t.Fatalf("kept %d + dropped %d != 2000 appended", len(ids), dropped)
	}
	if ids[len(ids)-1] != "id-1999" || ids[0] != fmt.Sprintf("id-%d", dropped) {
		t.Fatalf("kept %s..%s after dropping %d: the oldest must go first", ids[0], ids[len(ids)-1], dropped)
	}
}

func TestValidate(t *testing.T) {
	if _, err := Open(Config{Dir: t.TempDir(), MaxBytes: 10}); err == nil {
		t.Fatal("tiny max_bytes accepted")
	}
	s := mustOpen(t, Config{Dir: t.TempDir(), MaxBytes: 64 << 10, SegmentBytes: 1024})
	if _, err := s.Append(Record{Data: make([]byte, 2000)}); err == nil {
		t.Fatal("record larger than a segment accepted")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(rec(1)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeRecord(data)
		if err != nil {
			return
		}
		if string(encodeRecord(r)) != string(data) {
			t.Fatalf("decode/encode changed the record")
		}
	})
}

// TestAttackSpoolPrivate: the spool holds the node's samples; its directory and
// files are the owner's alone, and a directory and segment an older release left
// open to others are restricted when the spool opens.
func TestAttackSpoolPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	cfg := Config{Dir: dir, MaxBytes: 1 << 20, SegmentBytes: 1024}
	s := mustOpen(t, cfg)
	for i := range 20 {
		if _, err := s.Append(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, n, _, err := s.Peek(); err != nil {
		t.Fatal(err)
	} else if err := s.Ack(n); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wantPrivate(t, dir)

	// As an older release left it: everyone may read.
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	if _, err := s.Append(rec(99)); err != nil {
		t.Fatal(err)
	}
	drainAll(t, s)
	wantPrivate(t, dir)
}

// wantPrivate fails for every path under root with a group or other bit.
func wantPrivate(t *testing.T, root string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n++
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %04o, want no group or other bits", p, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("only %d paths under %s: the spool wrote nothing", n, root)
	}
}
