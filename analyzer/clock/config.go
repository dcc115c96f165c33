package clock

import (
	"errors"
	"fmt"
	"time"
)

// Config says when passes fall due on the data's clock.
type Config struct {
	// Interval is the data-clock time between passes.
	Interval time.Duration `yaml:"interval"`
	// GapLimit, when positive, is how long after the last record passes go on when
	// the next record is further away; passes resume at the one due just before
	// the data does. 0 runs every pass in a gap.
	GapLimit time.Duration `yaml:"gap_limit"`
	// Start is the data clock's start: the first pass falls due at
	// Start+Interval. Zero: the time of the first Advance.
	Start time.Time `yaml:"start"`
}

// DefaultConfig returns a pass every 5 minutes (the analyzer's default) with no
// gap limit, starting at the first Advance.
func DefaultConfig() Config {
	return Config{Interval: 5 * time.Minute}
}

// Validate checks the configuration; each error names its field.
func (c Config) Validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("interval: must be positive, got %v", c.Interval))
	}
	if c.GapLimit < 0 {
		errs = append(errs, fmt.Errorf("gap_limit: must be 0 (none) or positive, got %v", c.GapLimit))
	}
	return errors.Join(errs...)
}
