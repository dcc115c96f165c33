package alerts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/gpupool/gpupool/schemas"
)

func title(m *schemas.FindingMessage) string {
	t := m.Finding.Kind.Info().Title
	if t == "" {
		t = "GPU finding: " + string(m.Finding.Kind)
	}
	switch {
	case m.Event == schemas.EventResolved:
		return ":white_check_mark: Resolved — " + t
	case m.Event == schemas.EventNotice:
		return ":alarm_clock: " + t + " — action scheduled"
	case m.Finding.Severity == schemas.SeverityCritical:
		return ":rotating_light: " + t
	case m.Finding.Severity == schemas.SeverityInfo:
		return ":bulb: " + t
	}
	return ":warning: " + t
}

// action is the scheduler's next action a notice announces, or nil.
func action(m *schemas.FindingMessage) *schemas.Notice {
	if m.Notice == nil || m.Notice.NextAction == "" {
		return nil
	}
	return m.Notice
}

func money(v float64, currency string) string {
	if currency == "" {
		currency = "USD"
	}
	return fmt.Sprintf("%.2f %s", v, currency)
}

// Text is the plain-text form (notifications, clients without blocks).
func Text(m *schemas.FindingMessage) string {
	a := &m.Finding
	s := fmt.Sprintf("%s: job %s (team %s) on %s", strings.TrimLeft(title(m), ": abcdefghijklmnopqrstuvwxyz_"), a.Job, a.Team, a.Node)
	if a.WasteGPUHours > 0 {
		s += fmt.Sprintf(", %.1f GPU-hours wasted (%s)", a.WasteGPUHours, money(a.WasteCost, a.Currency))
	}
	if n := action(m); n != nil {
		s += fmt.Sprintf("; %s at %s UTC", n.NextAction, n.NextAt.UTC().Format("15:04"))
	}
	return s
}

// Blocks is the Block Kit message for a finding message: what, whose, how much it
// costs, the evidence, and what happens next.
func Blocks(m *schemas.FindingMessage, now time.Time) []slack.Block {
	a := &m.Finding
	mrkdwn := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
	}
	var blocks []slack.Block
	blocks = append(blocks, slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, title(m), true, false)))
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
	if n := action(m); n != nil {
		what := fmt.Sprintf("*Next:* %s at %s UTC", n.NextAction, n.NextAt.UTC().Format("2006-01-02 15:04"))
		if d := n.NextAt.Sub(now); d > 0 {
			what += fmt.Sprintf(" (in %s)", d.Round(time.Minute))
		}
		if n.DryRun {
			what += " — dry run: it will only be recorded"
		}
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(what), nil, nil))
	}
	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(fmt.Sprintf("finding `%s` · episode %d · %s · gpupool", a.ID, a.Episode, orDash(string(a.Severity))))))
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
