package scheduler

import "fmt"

// maxPushedFindings is MaxPushedFindings, or its default when unset.
func (c Config) maxPushedFindings() int {
	if c.MaxPushedFindings == 0 {
		return DefaultMaxPushedFindings
	}
	return c.MaxPushedFindings
}

// validateFindings checks the settings of pushed findings.
func (c Config) validateFindings() []error {
	if c.MaxPushedFindings < 0 {
		return []error{fmt.Errorf("max_pushed_findings: %d is negative (0: the default, %d)", c.MaxPushedFindings, DefaultMaxPushedFindings)}
	}
	return nil
}
