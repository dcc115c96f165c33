package analyzer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpupool/gpupool/analyzer/findings"
	"github.com/gpupool/gpupool/schemas"
)

// Config configures the analyzer service (the analyzer: section of the
// configuration file).
type Config struct {
	// Interval is the time between passes (wall time for `gpupool analyzer`,
	// simulated time for the demo and `gpupool analyze`). It is also the detectors'
	// pass interval: findings.interval follows it.
	Interval time.Duration `yaml:"interval"`
	// MetricsListen is the address of /metrics, /healthz and /readyz of `gpupool
	// analyzer` ("" disables them unless the top-level metrics_listen is set).
	MetricsListen string `yaml:"metrics_listen"`
	// PriceBook is a price book CSV (see `gpupool pricebook load`): `gpupool
	// analyze` loads it into its temporary store, and the demo seeds an empty
	// price_book with it. Empty: deploy/price_book.example.csv, built in.
	PriceBook string `yaml:"price_book"`
	// PriceCheckWindow is the period before each pass whose price book the pass
	// checks (gpupool_price_book_problems).
	PriceCheckWindow time.Duration `yaml:"price_check_window"`
	// Findings are the detectors' thresholds, per pool.
	Findings findings.Config `yaml:"findings"`
}

// DefaultConfig returns a pass every 5 minutes with the detectors' defaults.
func DefaultConfig() Config {
	f := findings.DefaultConfig()
	return Config{Interval: f.Interval, PriceCheckWindow: 24 * time.Hour, Findings: f}
}

// FindingsConfig returns the detectors' configuration with its interval set to the
// service's.
func (c Config) FindingsConfig() findings.Config {
	f := c.Findings
	f.Interval = c.Interval
	return f
}

// Validate checks the configuration; each error names its field (interval,
// findings.resolve_after, …).
func (c Config) Validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, schemas.Fieldf("interval", "must be positive, got %v", c.Interval))
	}
	if c.PriceCheckWindow <= 0 {
		errs = append(errs, schemas.Fieldf("price_check_window", "must be positive, got %v", c.PriceCheckWindow))
	}
	// findings.interval is the detectors' copy of interval; one set to something
	// else would be silently ignored, so it is refused.
	if fi := c.Findings.Interval; fi != c.Interval && fi != findings.DefaultConfig().Interval {
		errs = append(errs, schemas.Fieldf("findings.interval", "%v differs from interval %v; set interval only", fi, c.Interval))
	}
	if c.Interval > 0 {
		if err := c.FindingsConfig().Validate(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				errs = append(errs, fmt.Errorf("findings.%s", line))
			}
		}
	}
	return errors.Join(errs...)
}
