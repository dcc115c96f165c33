package reports

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// OpenOutput is where command who writes a result in format: the file path when
// one is given (close it after), else w, or standard output when w is nil, where
// Parquet is refused on a terminal because it is binary.
func OpenOutput(who, path, format string, w io.Writer) (io.Writer, func() error, error) {
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", who, err)
		}
		return f, f.Close, nil
	}
	nop := func() error { return nil }
	if w != nil {
		return w, nop, nil
	}
	if format == FormatParquet && term.IsTerminal(int(os.Stdout.Fd())) {
		return nil, nil, fmt.Errorf("%s: Parquet is binary: write it to a file with -o FILE or redirect standard output", who)
	}
	return os.Stdout, nop, nil
}
