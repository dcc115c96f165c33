package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestReportsSection(t *testing.T) {
	c, err := Load(writeConfig(t, `
data_dir: /var/lib/gpupool
reports:
  metrics_listen: ":9472"
  schedules:
    - {name: monthly, cron: "0 8 1 * *", timezone: Europe/Berlin, period: previous_month, formats: [html, csv]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Reports.Dir != filepath.Join("/var/lib/gpupool", "reports") || c.Reports.StateFile != filepath.Join("/var/lib/gpupool", "reports", ".schedules.json") {
		t.Errorf("derived paths: dir %q state %q", c.Reports.Dir, c.Reports.StateFile)
	}
	if len(c.Reports.Schedules) != 1 || c.Reports.Schedules[0].TimeZone != "Europe/Berlin" || !c.Reports.Refresh {
		t.Errorf("reports: %+v", c.Reports)
	}

	for name, tt := range map[string]struct{ body, want string }{
		"bad period":    {"reports:\n  schedules:\n    - {name: m, cron: '0 8 1 * *', period: last_month, formats: [csv]}\n", "reports.schedules[0].period"},
		"bad cron":      {"reports:\n  schedules:\n    - {name: m, cron: 'monthly', period: previous_month, formats: [csv]}\n", "reports.schedules[0].cron"},
		"slack missing": {"reports:\n  schedules:\n    - {name: m, cron: '0 8 1 * *', period: previous_day, formats: [csv], slack_channel: C1}\n", "reports.schedules[0].slack_channel"},
		"unknown key":   {"reports:\n  directory: x\n", "directory"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v does not name %s", err, tt.want)
			}
		})
	}
}
