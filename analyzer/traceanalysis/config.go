package traceanalysis

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/store/chdb"
)

// DefaultGapLimit is how long after a trace's last record passes go on when the
// next record is further away: longer than every detector's window (2 h by
// default), so a condition at the end of a stretch is seen out.
const DefaultGapLimit = 3 * time.Hour

// Config configures an analysis.
type Config struct {
	// Analyzer is the analyzer's configuration; Interval is the trace time
	// between passes.
	Analyzer analyzer.Config `yaml:"analyzer"`
	// Store is the embedded engine's settings; Run sets Path (a temporary
	// directory) and ReadOnly (false).
	Store chdb.Config `yaml:"store"`
	// Prices is the price book loaded into the temporary store.
	Prices []analyzer.PriceRow `yaml:"-"`
	// GapLimit is how long after a record passes go on when the next record is
	// further away (see DefaultGapLimit); 0 runs every pass of a gap.
	GapLimit time.Duration `yaml:"gap_limit"`
	// SkipBadLines skips lines that break the trace format (Report.LineErrors
	// lists them) instead of stopping at the first.
	SkipBadLines bool `yaml:"skip_bad_lines"`
	// File names the trace in the report.
	File string `yaml:"file"`
}

// DefaultConfig returns the analyzer's and the engine's defaults, the built-in
// gap limit and no price book.
func DefaultConfig() Config {
	return Config{Analyzer: analyzer.DefaultConfig(), Store: chdb.DefaultConfig(), GapLimit: DefaultGapLimit}
}

// Validate checks the configuration; each error names its field.
func (c Config) Validate() error {
	var errs []error
	if err := c.Analyzer.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("analyzer: %w", err))
	}
	if c.GapLimit < 0 {
		errs = append(errs, fmt.Errorf("gap_limit: must be 0 (none) or positive, got %v", c.GapLimit))
	}
	return errors.Join(errs...)
}
