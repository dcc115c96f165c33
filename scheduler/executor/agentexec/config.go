package agentexec

import (
	"errors"
	"fmt"
	"time"
)

// Config configures the agent executor.
type Config struct {
	// Cluster is the cluster a target without one is on.
	Cluster string `yaml:"cluster"`
	// SecretFile holds the secret shared with the node agents (at least 16 bytes);
	// commands are signed with it.
	SecretFile string `yaml:"secret_file"`
	// ReplyMargin is how much longer than the grace period to wait for an answer:
	// the agent waits up to 10s after SIGKILL for the process to go.
	ReplyMargin time.Duration `yaml:"reply_margin"`
	// Reason prefixes the reason sent with each command, logged by the agent.
	Reason string `yaml:"reason"`
}

// DefaultConfig returns the defaults: a 20s reply margin.
func DefaultConfig() Config {
	return Config{ReplyMargin: 20 * time.Second, Reason: "gpupool scheduler"}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.SecretFile == "":
		return errors.New("secret_file: the agents' shared secret is needed to sign commands")
	case c.ReplyMargin <= 0:
		return fmt.Errorf("reply_margin: %s must be positive", c.ReplyMargin)
	}
	return nil
}
