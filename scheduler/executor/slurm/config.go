package slurm

import (
	"errors"
	"fmt"
	"time"
)

// Config configures the Slurm executor.
type Config struct {
	// Scontrol and Scancel are the commands to run: a path, or a name looked up on
	// PATH.
	Scontrol string `yaml:"scontrol"`
	Scancel  string `yaml:"scancel"`
	// Timeout bounds each command.
	Timeout time.Duration `yaml:"timeout"`
	// Cluster, when set, is the one Slurm cluster this executor acts on: job IDs are
	// per cluster, so a target from another cluster is refused (ErrUnsupported).
	Cluster string `yaml:"cluster"`
	// Hold requeues with scontrol requeuehold, so a requeued job stays pending until
	// Resume releases it.
	Hold bool `yaml:"hold"`
}

// DefaultConfig returns the defaults: scontrol and scancel from PATH, 30s each, no
// hold.
func DefaultConfig() Config {
	return Config{Scontrol: "scontrol", Scancel: "scancel", Timeout: 30 * time.Second}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Scontrol == "" || c.Scancel == "":
		return errors.New("scontrol and scancel: both commands are needed")
	case c.Timeout <= 0:
		return fmt.Errorf("timeout: %s must be positive", c.Timeout)
	}
	return nil
}
