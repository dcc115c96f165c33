package attribution

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// userHZ is the unit of the times in /proc/<pid>/stat: USER_HZ, 100 on every Linux
// architecture gpupool runs on.
const userHZ = 100

// statBufSize holds /proc/<pid>/stat up to field 22 (starttime): the command name is
// at most 64 bytes and every field before starttime at most 20 digits.
const statBufSize = 1024

// procFS reads the files of one procfs tree.
type procFS struct {
	root string
	// readFile is os.ReadFile; tests replace it to see how a read error (EACCES on
	// another user's environ, say) is handled.
	readFile func(name string) ([]byte, error)
}

func newProcFS(root string) procFS {
	return procFS{root: filepath.Clean(root), readFile: os.ReadFile}
}

// path returns <root>/<pid>/<name>.
func (p procFS) path(pid uint32, name string) string {
	return p.root + "/" + strconv.FormatUint(uint64(pid), 10) + "/" + name
}

// read reads <root>/<pid>/<name>, mapping "no such file" and "no such process" to
// ErrNoProcess.
func (p procFS) read(pid uint32, name string) ([]byte, error) {
	b, err := p.readFile(p.path(pid, name))
	if err != nil {
		return nil, procErr(pid, name, err)
	}
	return b, nil
}

// procErr wraps a read error of <pid>/<name>, as ErrNoProcess when the process is
// gone.
func procErr(pid uint32, name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("read /proc/%d/%s: %w (%w)", pid, name, ErrNoProcess, err)
	}
	return fmt.Errorf("read /proc/%d/%s: %w", pid, name, err)
}

// bootTimeSeconds reads "btime" (seconds since the epoch) from <root>/stat.
func (p procFS) bootTimeSeconds() (int64, error) {
	b, err := p.readFile(p.root + "/stat")
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			v, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("%s/stat: bad btime line %q", p.root, bytes.TrimSpace(line))
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("%s/stat: no btime line", p.root)
}

// readStartTicks returns field 22 of the stat file at path (the process's start
// time in clock ticks since boot). It is the one read a cached attribution makes, so
// it reads into a stack buffer through the syscall package, avoiding os.File's
// allocations.
func readStartTicks(path string) (uint64, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	var buf [statBufSize]byte
	n, err := syscall.Read(fd, buf[:])
	syscall.Close(fd)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		n = 0
	}
	return parseStartTicks(buf[:n])
}

// errBadStat reports a stat file without a start time.
var errBadStat = errors.New("no start time in stat file")

// parseStartTicks extracts field 22 (starttime) from the contents of
// /proc/<pid>/stat. The command name (field 2) is in parentheses and may itself hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseStartTicks(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errBadStat
	}
	b = b[i+1:]
	// Fields 3 (state) to 22 follow the ')': starttime is the 20th.
	for field := 3; ; field++ {
		for len(b) > 0 && b[0] == ' ' {
			b = b[1:]
		}
		end := bytes.IndexByte(b, ' ')
		if end < 0 {
			end = len(b)
		}
		if field == 22 {
			v, ok := parseUint(bytes.TrimRight(b[:end], "\n"))
			if !ok {
				return 0, errBadStat
			}
			return v, nil
		}
		if end == len(b) {
			return 0, errBadStat
		}
		b = b[end:]
	}
}

// parseUint parses decimal digits without allocating.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// processUID reads the real user ID from /proc/<pid>/status ("Uid:\treal\teff…").
func (p procFS) processUID(pid uint32) (uint32, bool) {
	b, err := p.read(pid, "status")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			v, err := strconv.ParseUint(string(f[0]), 10, 32)
			return uint32(v), err == nil
		}
	}
	return 0, false
}

// exeName returns the base name of the process's executable (the target of
// /proc/<pid>/exe), or its comm when the link cannot be read (another user's
// process without CAP_SYS_PTRACE, a kernel thread).
func (p procFS) exeName(pid uint32) string {
	if target, err := os.Readlink(p.path(pid, "exe")); err == nil && target != "" {
		return filepath.Base(strings.TrimSuffix(target, " (deleted)"))
	}
	if b, err := p.read(pid, "comm"); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

// cmdline returns /proc/<pid>/cmdline with its NUL separators made spaces.
func (p procFS) cmdline(pid uint32) string {
	b, err := p.read(pid, "cmdline")
	if err != nil {
		return ""
	}
	b = bytes.TrimRight(b, "\x00")
	return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
}
