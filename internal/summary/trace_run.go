package summary

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/gpupool/gpupool/internal/traceanalysis"
	"github.com/gpupool/gpupool/reports"
)

// AnalyzeFile runs the trace file at path through traceanalysis with cfg, showing
// its progress on errOut (a bar on the terminal os.Stderr, lines every 5 s on
// any other writer), and returns its report.
func AnalyzeFile(ctx context.Context, cfg traceanalysis.Config, path string, errOut io.Writer, log *slog.Logger) (*traceanalysis.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	defer f.Close()
	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	prog := reports.NewProgressLines(errOut, 5*time.Second)
	if errOut == os.Stderr {
		prog = reports.NewProgress(os.Stderr)
	}
	an, err := traceanalysis.New(cfg, traceanalysis.WithLogger(log), traceanalysis.WithProgress(TraceProgress(prog, size)))
	if err != nil {
		return nil, err
	}
	rep, err := an.Run(ctx, f)
	prog.Done()
	if err != nil {
		return nil, fmt.Errorf("analyze %s: %w", path, err)
	}
	return rep, nil
}
