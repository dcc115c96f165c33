package traceanalysis

import (
	"fmt"
	"io"
	"os"

	"github.com/gpupool/gpupool/analyzer/findings"
)

// ScoreTruthFile reads the truth file at path (ReadTruth), scores rep's findings
// against it with the windows of cfg and writes the score to w (WriteScore).
func ScoreTruthFile(w io.Writer, path string, rep *Report, cfg findings.Config) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	defer f.Close()
	truth, err := ReadTruth(f)
	if err != nil {
		return fmt.Errorf("analyze %s: %w", path, err)
	}
	return WriteScore(w, Score(rep.Findings, truth, Windows(cfg), rep.Trace.End))
}
