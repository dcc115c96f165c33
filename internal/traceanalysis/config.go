package traceanalysis

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/analyzer"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/store/chdb"
)

// DefaultGapLimit is how long after a trace's last record passes go on when the
// next record is further away: longer than every detector's window (2 h by
// default), so a condition at the end of a stretch is seen out.
const DefaultGapLimit = 3 * time.Hour

// MaxReorderWindow bounds Config.ReorderWindow: what is held that long fills
// memory.
const MaxReorderWindow = 24 * time.Hour

// Default time bounds of a trace's lines, relative to its own clock (the latest
// time of the lines read so far; schemas/trace orders them).
const (
	// DefaultReorderWindow is how far a line may come out of time order: a few
	// collector intervals of skew between nodes written to one file, and a
	// merge of per-node files by hand.
	DefaultReorderWindow = 5 * time.Minute
	// DefaultFutureSkew is how far a line may lie after the trace's clock without
	// the lines after it following: a clock an hour off is a time-zone mistake,
	// and a day ahead billed every running job a day longer.
	DefaultFutureSkew = time.Hour
)

// Config configures an analysis.
type Config struct {
	// Analyzer is the analyzer's configuration; Interval is the trace time
	// between passes.
	Analyzer analyzer.Config `yaml:"analyzer"`
	// Store is the embedded engine's settings; Run sets Path (a temporary
	// directory) and ReadOnly (false).
	Store chdb.Config `yaml:"store"`
	// Prices is the price book loaded into the temporary store.
	Prices []pricebook.Row `yaml:"-"`
	// GapLimit is how long after a record passes go on when the next record is
	// further away (see DefaultGapLimit); 0 runs every pass of a gap.
	GapLimit time.Duration `yaml:"gap_limit"`
	// SkipBadLines skips lines that break the trace format (Report.LineErrors
	// lists them) instead of stopping at the first.
	SkipBadLines bool `yaml:"skip_bad_lines"`
	// ReorderWindow is how far in trace time a line may come before a later
	// line it follows and still be put in place; a line further back is late
	// (refused, or dropped and counted with SkipBadLines).
	ReorderWindow time.Duration `yaml:"reorder_window"`
	// FutureSkew is how far a line may lie after the trace's clock unless the
	// lines after it follow (a gap in the trace); a line further ahead is in the
	// future (refused, or dropped and counted with SkipBadLines).
	FutureSkew time.Duration `yaml:"future_skew"`
	// File names the trace in the report.
	File string `yaml:"file"`
}

// DefaultConfig returns the analyzer's and the engine's defaults, the built-in
// gap limit and no price book.
func DefaultConfig() Config {
	return Config{Analyzer: analyzer.DefaultConfig(), Store: chdb.DefaultConfig(), GapLimit: DefaultGapLimit,
		ReorderWindow: DefaultReorderWindow, FutureSkew: DefaultFutureSkew}
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
	if c.ReorderWindow <= 0 || c.ReorderWindow > MaxReorderWindow {
		errs = append(errs, fmt.Errorf("reorder_window: must be positive and at most %s (records are held that long), got %v", MaxReorderWindow, c.ReorderWindow))
	}
	if c.FutureSkew <= 0 {
		errs = append(errs, fmt.Errorf("future_skew: must be positive, got %v", c.FutureSkew))
	}
	return errors.Join(errs...)
}
