package chdb

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseCode asks the kernel to reclaim the resident pages of the read-only
// mappings (code and constant data) of the library and of the process's own
// executable now, with MADV_PAGEOUT: the engine touches most of its 566 MB of
// code once, while it starts (registering its functions, formats and engines),
// as the Go program runs every package's initialisation once, and a writer runs
// a small part of either again; the pages it does run fault back in from the
// file. It returns the process's file-backed resident bytes before and after.
// A library with no such mapping is an error; an executable without one (run
// from a file since replaced, or not found) is left as it is.
//
// With pageByPage, the code faults back one page at a time: the mappings are
// advised MADV_RANDOM (no read-ahead around a fault) and the file's pages no
// process maps are dropped from the page cache (the kernel maps the cached pages
// around a faulting one too: in large folios, up to a megabyte for one page of
// code). Only the pages the process runs come back, at the price of one read of
// the file per page. The kernel releases no page another process maps too.
func releaseCode(libPath string, pageByPage bool) (before, after uint64, err error) {
	libPath, err = resolved(libPath)
	if err != nil {
		return 0, 0, err
	}
	libs, err := readOnlyRanges(libPath)
	if err != nil {
		return 0, 0, err
	}
	if len(libs) == 0 {
		return 0, 0, fmt.Errorf("no read-only mapping of %s in /proc/self/maps", libPath)
	}
	// The executable is released as well as it can be: one that cannot be
	// found or read about keeps its pages, and the library is still released.
	var exes [][2]uintptr
	exe, err := os.Executable()
	if err == nil {
		exe, err = resolved(exe)
	}
	if err == nil && exe != libPath {
		exes, _ = readOnlyRanges(exe)
	}
	before, _ = fileRSS()
	for _, f := range []struct {
		path   string
		ranges [][2]uintptr
	}{{libPath, libs}, {exe, exes}} {
		if len(f.ranges) == 0 {
			continue
		}
		if err := pageOut(f.path, f.ranges, pageByPage); err != nil {
			return before, 0, err
		}
	}
	after, err = fileRSS()
	return before, after, err
}

// resolved is path as /proc/self/maps names it: absolute, links resolved.
func resolved(path string) (string, error) {
	path, err := filepath.Abs(path)
	if err == nil {
		path, err = filepath.EvalSymlinks(path)
	}
	return path, err
}

// pageOut releases file's resident pages in ranges (see releaseCode).
func pageOut(file string, ranges [][2]uintptr, pageByPage bool) error {
	for _, r := range ranges {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_PAGEOUT); e != 0 {
			return fmt.Errorf("madvise(MADV_PAGEOUT) on %s: %w", file, e)
		}
		if !pageByPage {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_RANDOM); e != 0 {
			return fmt.Errorf("madvise(MADV_RANDOM) on %s: %w", file, e)
		}
	}
	if pageByPage {
		return dropCached(file)
	}
	return nil
}

// dropCached drops the page cache's clean pages of file that no process maps
// (POSIX_FADV_DONTNEED): they are read again when something needs them.
func dropCached(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("posix_fadvise(DONTNEED) on %s: %w", file, err)
	}
	return nil
}

// readOnlyRanges lists the address ranges [start, end) of file's mappings that
// are not writable: those hold only pages of the file itself, which the kernel
// can drop and read again (writable ones may hold the process's own changes).
func readOnlyRanges(file string) ([][2]uintptr, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 7f..-7f.. r-xp 00000000 08:01 1234  /path/libchdb.so
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[5] != file || strings.Contains(fs[1], "w") {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b <= a {
			return nil, fmt.Errorf("/proc/self/maps: bad range %q", fs[0])
		}
		out = append(out, [2]uintptr{uintptr(a), uintptr(b)})
	}
	return out, sc.Err()
}

// fileRSS is the process's file-backed resident memory in bytes (RssFile).
func fileRSS() (uint64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kib, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/self/status: RssFile %q: %w", v, err)
			}
			return kib << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/self/status: no RssFile line")
}

// ReleaseProgramCode releases the resident pages of the process's own
// executable's read-only mappings, page by page (see releaseCode), for a process
// that runs no engine: `gpupool ingest` writing to a ClickHouse server, whose
// packages' initialisation ran code it does not run again. It returns the
// process's file-backed resident bytes before and after.
func ReleaseProgramCode() (before, after uint64, err error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = resolved(exe)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("release the program's code: %w", err)
	}
	ranges, err := readOnlyRanges(exe)
	if err != nil {
		return 0, 0, fmt.Errorf("release the program's code: %w", err)
	}
	before, _ = fileRSS()
	if err := pageOut(exe, ranges, true); err != nil {
		return before, 0, err
	}
	after, err = fileRSS()
	return before, after, err
}
