package dcgm

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config says how to reach DCGM and what to watch.
type Config struct {
	// Address is the nv-hostengine to connect to: "host:port" (DCGM listens on
	// 5555), "tcp://host:port" or "unix:///path/to/socket". Empty starts a host
	// engine inside this process (embedded mode). Connecting lets gpupool run
	// beside dcgm-exporter, which owns the node's host engine.
	Address string `yaml:"address"`
	// UpdateInterval is how often DCGM samples the watched fields. Profiling
	// ratios are averages over it, so it is best set near the collector's interval.
	UpdateInterval time.Duration `yaml:"update_interval"`
	// MaxKeepAge is how long DCGM keeps a field's samples; a value older than this
	// when sampled is reported as Missing (the GPU stopped answering).
	MaxKeepAge time.Duration `yaml:"max_keep_age"`
	// ProcRoot is the host's /proc (e.g. "/host/proc" in a container); process
	// names that neither the lister nor DCGM gave are read from it.
	ProcRoot string `yaml:"proc_root"`
	// Fields are the DCGM fields to watch, by any name ResolveField accepts (both
	// DCGM name generations, dcgm-exporter names, IDs); empty means
	// DefaultFields. Columns no listed field fills stay Missing.
	Fields []string `yaml:"fields"`
}

// DefaultConfig returns embedded mode, sampling every second and keeping 30 s.
func DefaultConfig() Config {
	return Config{UpdateInterval: time.Second, MaxKeepAge: 30 * time.Second, ProcRoot: "/proc"}
}

// Limits DCGM puts on watches: profiling fields cannot be sampled faster than
// every 100 ms.
const (
	minUpdateInterval = 100 * time.Millisecond
	maxUpdateInterval = time.Hour
)

// Validate reports every invalid field; each line starts with the field's yaml name.
func (c Config) Validate() error {
	var errs []error
	if err := validateAddress(c.Address); err != nil {
		errs = append(errs, fmt.Errorf("address: %w", err))
	}
	if c.UpdateInterval < minUpdateInterval || c.UpdateInterval > maxUpdateInterval {
		errs = append(errs, fmt.Errorf("update_interval: must be %v..%v, got %v", minUpdateInterval, maxUpdateInterval, c.UpdateInterval))
	}
	if c.MaxKeepAge < 2*c.UpdateInterval {
		errs = append(errs, fmt.Errorf("max_keep_age: must be at least twice update_interval (%v), got %v", 2*c.UpdateInterval, c.MaxKeepAge))
	}
	if c.ProcRoot == "" || !filepath.IsAbs(c.ProcRoot) {
		errs = append(errs, fmt.Errorf("proc_root: must be an absolute path such as /proc, got %q", c.ProcRoot))
	}
	if _, err := requestedSpecs(c.Fields); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func validateAddress(a string) error {
	network, addr := splitAddress(a)
	switch {
	case network == "":
		return nil
	case strings.ContainsAny(a, " \t\n"):
		return fmt.Errorf("%q contains white space", a)
	case network == "unix":
		if !filepath.IsAbs(addr) {
			return fmt.Errorf("%q: a unix socket address must be unix:///absolute/path", a)
		}
		return nil
	case strings.Contains(addr, "://"):
		return fmt.Errorf("%q: only tcp:// and unix:// are understood; use host:port for TCP", a)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		// A bare host: DCGM uses its default port, 5555.
		if strings.Contains(addr, ":") && !strings.HasPrefix(addr, "[") {
			return fmt.Errorf("%q: want host:port, e.g. localhost:5555", a)
		}
		host = addr
	} else if p, perr := strconv.Atoi(port); perr != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: port must be 1..65535", a)
	}
	if host == "" {
		return fmt.Errorf("%q: missing host, e.g. localhost:5555", a)
	}
	return nil
}

// splitAddress returns the transport ("" embedded, "tcp" or "unix") and the address
// go-dcgm's Standalone mode expects.
func splitAddress(a string) (network, addr string) {
	switch {
	case a == "":
		return "", ""
	case strings.HasPrefix(a, "unix://"):
		return "unix", strings.TrimPrefix(a, "unix://")
	case strings.HasPrefix(a, "tcp://"):
		return "tcp", strings.TrimPrefix(a, "tcp://")
	}
	return "tcp", a
}
