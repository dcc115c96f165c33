package console

import (
	"errors"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Config is the console's settings.
type Config struct {
	// Listen is the address the console serves on (default 127.0.0.1:9480).
	Listen string `yaml:"listen"`
	// Refresh is how often live pages reload their content (default 5s).
	Refresh time.Duration `yaml:"refresh"`
	// SecureCookie marks the login cookie Secure (set when the console is served
	// over HTTPS, directly or by a proxy in front).
	SecureCookie bool `yaml:"secure_cookie"`
	// MaxRows bounds the rows of a list page (default 500).
	MaxRows int `yaml:"max_rows"`
}

// DefaultConfig is loopback on port 9480, refreshing every 5 s.
func DefaultConfig() Config {
	return Config{Listen: "127.0.0.1:9480", Refresh: 5 * time.Second, MaxRows: 500}
}

// Validate checks the settings; each error names its field (the configuration
// file's section is console).
func (c Config) Validate() error {
	var errs []error
	if c.Listen == "" {
		errs = append(errs, schemas.Field("listen", errors.New("empty (e.g. 127.0.0.1:9480)")))
	}
	if c.Refresh < time.Second {
		errs = append(errs, schemas.Fieldf("refresh", "%s is under 1s", c.Refresh))
	}
	if c.MaxRows < 1 {
		errs = append(errs, schemas.Fieldf("max_rows", "%d, want at least 1", c.MaxRows))
	}
	return errors.Join(errs...)
}
