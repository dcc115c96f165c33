package reports

import (
	"errors"
	"fmt"
	"strings"
)

// Config configures `gpupool reports`, the long-running service that writes
// scheduled chargeback reports.
type Config struct {
	// Dir is where reports are written, as <name>-<period>.<format>; empty is
	// <data_dir>/reports.
	Dir string `yaml:"dir"`
	// StateFile records each schedule's last run, so that a run missed while the
	// service was down is caught up once on start; empty is <dir>/.schedules.json.
	StateFile string `yaml:"state_file"`
	// MetricsListen is the address of /metrics, /healthz and /readyz ("" disables
	// it).
	MetricsListen string `yaml:"metrics_listen"`
	// Refresh brings the chargeback rollups up to the period's end before each
	// report (the analyzer does it too; this makes a report complete on its own).
	Refresh bool `yaml:"refresh"`
	// Schedules are the reports to write.
	Schedules []Schedule `yaml:"schedules"`
	// Slack posts a summary of each report to its schedule's slack_channel.
	Slack SlackConfig `yaml:"slack"`
}

// SlackConfig says how reports reach Slack: an incoming webhook (the summary
// message only) or a bot token (the summary and the report file, uploaded).
type SlackConfig struct {
	// WebhookURL is an incoming webhook; its channel is fixed by Slack.
	WebhookURL string `yaml:"webhook_url"`
	// BotTokenFile holds a bot token (xoxb-…) with chat:write and files:write.
	BotTokenFile string `yaml:"bot_token_file"`
	// APIURL is Slack's Web API root (tests and Enterprise Grid set it).
	APIURL string `yaml:"api_url"`
	// UploadFormat is the file uploaded with a bot token: html or csv.
	UploadFormat string `yaml:"upload_format"`
}

// Enabled reports whether a Slack destination is configured.
func (c SlackConfig) Enabled() bool { return c.WebhookURL != "" || c.BotTokenFile != "" }

// DefaultConfig returns the reports defaults: no schedules, no Slack.
func DefaultConfig() Config {
	return Config{
		Refresh: true,
		Slack:   SlackConfig{APIURL: "https://slack.com/api/", UploadFormat: "html"},
	}
}

// Validate checks the configuration, naming the failing field.
func (c Config) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range c.Schedules {
		if err := s.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("schedules[%d].%w", i, err))
			continue
		}
		if strings.ContainsAny(s.Name, `/\`) || strings.HasPrefix(s.Name, ".") {
			errs = append(errs, fmt.Errorf("schedules[%d].name: %q must be a plain file name prefix", i, s.Name))
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("schedules[%d].name: %q is used twice", i, s.Name))
		}
		seen[s.Name] = true
		if s.SlackChannel != "" && !c.Slack.Enabled() {
			errs = append(errs, fmt.Errorf("schedules[%d].slack_channel: set slack.webhook_url or slack.bot_token_file", i))
		}
	}
	if c.Slack.WebhookURL != "" && c.Slack.BotTokenFile != "" {
		errs = append(errs, errors.New("slack: give webhook_url or bot_token_file, not both"))
	}
	if c.Slack.UploadFormat != "html" && c.Slack.UploadFormat != "csv" {
		errs = append(errs, fmt.Errorf("slack.upload_format: %q is not html or csv", c.Slack.UploadFormat))
	}
	return errors.Join(errs...)
}
