package alerts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

var kindTitles = map[string]string{
	"idle":         "Idle GPUs",
	"zombie":       "Zombie process holding GPU memory",
	"memory_bound": "Memory-bound job",
	"wrong_card":   "Job on a bigger card than it needs",
	"low_util":     "Low GPU utilisation",
}

func title(a *Alert) string {
	t := kindTitles[a.Kind]
	if t == "" {
		t = "GPU finding: " + a.Kind
	}
	switch {
	case a.Event == EventResolved:
		return ":white_check_mark: Resolved — " + t
	case a.Event == EventNotice:
		return ":alarm_clock: " + t + " — action scheduled"
	case a.Severity == "critical":
		return ":rotating_light: " + t
	case a.Severity == "info":
		return ":bulb: " + t
	}
	return ":warning: " + t
}

func money(v float64, currency string) string {
	if currency == "" {
		currency = "USD"
	}
	return fmt.Sprintf("%.2f %s", v, currency)
}

// Text is the plain-text form (notifications, clients without blocks).
func Text(a *Alert) string {
	s := fmt.Sprintf("%s: job %s (team %s) on %s", strings.TrimLeft(title(a), ": abcdefghijklmnopqrstuvwxyz_"), a.Job, a.Team, a.Node)
	if a.WasteGPUHours > 0 {
		s += fmt.Sprintf(", %.1f GPU-hours wasted (%s)", a.WasteGPUHours, money(a.WasteCost, a.Currency))
	}
	if a.Event == EventNotice && a.Action != "" {
		s += fmt.Sprintf("; %s at %s UTC", a.Action, a.ActionAt.UTC().Format("15:04"))
	}
	return s
}

// Blocks is the Block Kit message for an alert: what, whose, how much it costs,
// the evidence, and what happens next.
func Blocks(a *Alert, now time.Time) []slack.Block {
	mrkdwn := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
	}
	var blocks []slack.Block
	blocks = append(blocks, slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, title(a), true, false)))
	job := a.Job
	if job == "" {
		job = "(no job — unattributed process)"
	}
	fields := []*slack.TextBlockObject{
		mrkdwn("*Job*\n`" + job + "`"),
		mrkdwn("*Team / project*\n" + orDash(a.Team) + " / " + orDash(a.Project)),
		mrkdwn(fmt.Sprintf("*GPUs*\n%d × %s on %s", max(1, len(a.GPUUUIDs)), orDash(a.Card), orDash(a.Node))),
		mrkdwn("*Since*\n" + a.FirstSeen.UTC().Format("2006-01-02 15:04 UTC")),
	}
	if a.PID != 0 {
		fields = append(fields, mrkdwn(fmt.Sprintf("*Process*\nPID %d", a.PID)))
	}
	if a.WasteGPUHours > 0 || a.WasteCost > 0 {
		fields = append(fields, mrkdwn(fmt.Sprintf("*Wasted so far*\n%.1f GPU-hours ≈ %s", a.WasteGPUHours, money(a.WasteCost, a.Currency))))
	}
	blocks = append(blocks, slack.NewSectionBlock(nil, fields, nil))
	if len(a.Evidence) > 0 {
		keys := make([]string, 0, len(a.Evidence))
		for k := range a.Evidence {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var lines []string
		for _, k := range keys {
			lines = append(lines, fmt.Sprintf("• %s: %s", strings.ReplaceAll(k, "_", " "), evidenceValue(k, a.Evidence[k])))
		}
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn("*Evidence*\n"+strings.Join(lines, "\n")), nil, nil))
	}
	if a.Recommendation != "" {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn("*Recommendation*\n"+a.Recommendation), nil, nil))
	}
	if a.Event == EventNotice && a.Action != "" {
		what := fmt.Sprintf("*Next:* %s at %s UTC", a.Action, a.ActionAt.UTC().Format("2006-01-02 15:04"))
		if d := a.ActionAt.Sub(now); d > 0 {
			what += fmt.Sprintf(" (in %s)", d.Round(time.Minute))
		}
		if a.DryRun {
			what += " — dry run: it will only be recorded"
		}
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(what), nil, nil))
	}
	id := a.ID
	if id == "" {
		id = a.FindingID
	}
	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(fmt.Sprintf("finding `%s` · episode %d · %s · gpupool", id, a.Episode, orDash(a.Severity)))))
	return blocks
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// evidenceValue formats a figure by its name's unit: ratios as percentages.
func evidenceValue(name string, v float64) string {
	switch {
	case strings.HasSuffix(name, "_fraction") || strings.HasSuffix(name, "_active") || strings.HasSuffix(name, "_util") ||
		strings.Contains(name, "_active_") || strings.Contains(name, "_util_"):
		return fmt.Sprintf("%.1f%%", v*100)
	case strings.HasSuffix(name, "_mib"):
		return fmt.Sprintf("%.0f MiB", v)
	case strings.HasSuffix(name, "_minutes"):
		return fmt.Sprintf("%.0f min", v)
	}
	return fmt.Sprintf("%g", v)
}
