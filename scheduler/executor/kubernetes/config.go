package kubernetes

import (
	"errors"
	"fmt"
	"time"
)

// Mechanisms Config.Prefer may name.
const (
	PreferAuto       = "auto"
	PreferKueue      = "kueue"
	PreferJobSuspend = "job-suspend"
	PreferEvict      = "evict"
)

// Config configures the Kubernetes executor.
type Config struct {
	// Kubeconfig is the kubeconfig file to use; empty means the in-cluster service
	// account.
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context; empty means its current context.
	Context string `yaml:"context"`
	// Prefer picks the mechanisms to use: auto, kueue, job-suspend or evict (see the
	// package documentation).
	Prefer string `yaml:"prefer"`
	// KueueVersion is the version of the kueue.x-k8s.io API that Workloads are read
	// and patched through (v1beta1; v1beta2 on Kueue 0.15 and later).
	KueueVersion string `yaml:"kueue_version"`
	// RequestTimeout bounds each API request.
	RequestTimeout time.Duration `yaml:"request_timeout"`
}

// DefaultConfig returns the defaults: in-cluster, auto, Kueue v1beta1, 30s requests.
func DefaultConfig() Config {
	return Config{Prefer: PreferAuto, KueueVersion: "v1beta1", RequestTimeout: 30 * time.Second}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch c.Prefer {
	case PreferAuto, PreferKueue, PreferJobSuspend, PreferEvict:
	default:
		return fmt.Errorf("prefer: %q is not one of auto, kueue, job-suspend, evict", c.Prefer)
	}
	if c.KueueVersion == "" {
		return errors.New("kueue_version: empty (v1beta1 or v1beta2)")
	}
	if c.RequestTimeout < 0 {
		return fmt.Errorf("request_timeout: %s must not be negative", c.RequestTimeout)
	}
	if c.Context != "" && c.Kubeconfig == "" {
		return errors.New("context: set only with kubeconfig (the in-cluster config has no contexts)")
	}
	return nil
}

// useKueue reports whether Workloads may be looked up and patched.
func (c Config) useKueue() bool { return c.Prefer == PreferAuto || c.Prefer == PreferKueue }

// useJob reports whether Jobs may be suspended, resumed or deleted.
func (c Config) useJob() bool { return c.Prefer != PreferEvict }
