package billing

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpupool/gpupool/secure/fileperm"
)

// FileName is the stable name of a report file: <name>-<period>.<format>, e.g.
// chargeback-2026-11.html.
func FileName(name, period, format string) string {
	return name + "-" + period + "." + format
}

// WriteFiles renders r in each format into dir under FileName(name, …) and
// returns the paths written. Each file is rendered in full, written to a temporary
// file in dir and renamed over the old one, so a reader never sees half a report
// and a failed run leaves the previous file in place.
func WriteFiles(dir, name string, r *Report, formats []string) ([]string, error) {
	if err := fileperm.MkdirAll(dir, nil); err != nil { // 0700: reports carry every team's costs
		return nil, fmt.Errorf("report: reports directory: %w", err)
	}
	var paths []string
	for _, f := range formats {
		var buf bytes.Buffer
		if err := Render(&buf, r, f); err != nil {
			return paths, err
		}
		path := filepath.Join(dir, FileName(name, r.Period.Label, f))
		if err := writeAtomic(path, buf.Bytes()); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// writeAtomic writes data to path by a temporary file in the same directory,
// synced, then renamed over path.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), fileperm.File); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return nil
}
