package billing

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/slack-go/slack"

	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/secure/redact"
)

// Poster sends a report's summary (and file) to a Slack channel.
type Poster interface {
	Post(ctx context.Context, channel string, r *Report, files []string) error
}

// SlackPoster posts report summaries to Slack: with an incoming webhook, the
// message only (a webhook cannot upload files and its channel is fixed); with a bot
// token, the message to the channel and the report's HTML or CSV file uploaded in
// its thread (files.getUploadURLExternal, then files.completeUploadExternal).
type SlackPoster struct {
	cfg    reports.SlackConfig
	client *http.Client
	api    *slack.Client
}

var _ Poster = (*SlackPoster)(nil)

// NewSlackPoster returns a poster for cfg, reading the bot token file if one is
// set. client may be nil (http.DefaultClient).
func NewSlackPoster(cfg reports.SlackConfig, client *http.Client) (*SlackPoster, error) {
	if client == nil {
		client = http.DefaultClient
	}
	p := &SlackPoster{cfg: cfg, client: client}
	if cfg.BotTokenFile != "" {
		data, err := os.ReadFile(cfg.BotTokenFile)
		token := strings.TrimSpace(string(data))
		if err != nil || token == "" {
			return nil, fmt.Errorf("reports: slack.bot_token_file %s is empty or unreadable (put the bot token, xoxb-…, in it): %v", cfg.BotTokenFile, err)
		}
		opts := []slack.Option{slack.OptionHTTPClient(client)}
		if cfg.APIURL != "" {
			opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
		}
		p.api = slack.New(token, opts...)
	}
	return p, nil
}

// Post sends r's summary to channel (ignored with a webhook) and, with a bot
// token, uploads the file of files in the configured upload format.
func (p *SlackPoster) Post(ctx context.Context, channel string, r *Report, files []string) error {
	text, blocks := Summary(r), summaryBlocks(r)
	if p.api == nil {
		if p.cfg.WebhookURL == "" {
			return nil
		}
		msg := &slack.WebhookMessage{Text: text, Blocks: &slack.Blocks{BlockSet: blocks}}
		if err := slack.PostWebhookCustomHTTPContext(ctx, p.cfg.WebhookURL, p.client, msg); err != nil {
			// The webhook URL is the credential and net/http's error quotes it.
			return fmt.Errorf("%w: webhook: %w", ErrSlack, redact.Error(err))
		}
		return nil
	}
	_, ts, err := p.api.PostMessageContext(ctx, channel, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		return fmt.Errorf("%w: chat.postMessage to %s: %w", ErrSlack, channel, redact.Error(err))
	}
	for _, f := range files {
		if filepath.Ext(f) != "."+p.cfg.UploadFormat {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("%w: read %s: %w", ErrSlack, f, err)
		}
		_, err = p.api.UploadFileContext(ctx, slack.UploadFileParameters{
			Reader: strings.NewReader(string(data)), FileSize: len(data), Filename: filepath.Base(f),
			Title: "GPU chargeback " + r.Period.Label, Channel: channel, ThreadTimestamp: ts,
		})
		if err != nil {
			return fmt.Errorf("%w: upload %s to %s: %w", ErrSlack, filepath.Base(f), channel, redact.Error(err))
		}
	}
	return nil
}

// topTeams is how many teams a summary names.
const topTeams = 5

// Summary is the report in a few lines of text: totals, change against the
// previous period and the most expensive teams.
func Summary(r *Report) string {
	var b strings.Builder
	cur := r.Currency
	fmt.Fprintf(&b, "GPU chargeback %s: %s %s (%s vs %s), %.2f GPU-hours, idle %s %s (%.1f %% of measured time)",
		title(r), moneyText(r.Totals.Cost), cur, changeText(r.Change.Cost), r.Previous.Label,
		r.Totals.GPUHours, moneyText(r.Totals.IdleCost), cur, r.Totals.IdleRatio()*100)
	if r.Totals.FailedRerunGPUHours > 0 {
		fmt.Fprintf(&b, ", failed reruns %s %s", moneyText(r.Totals.FailedRerunCost), cur)
	}
	b.WriteString(".")
	if len(r.Teams) > 0 {
		b.WriteString("\nTop teams: ")
		for i, t := range r.Teams[:min(topTeams, len(r.Teams))] {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s (idle %s)", t.Team, moneyText(t.Cost), moneyText(t.IdleCost))
		}
		b.WriteString(".")
	}
	return b.String()
}

// title is the report's period, and the teams it is cut to.
func title(r *Report) string {
	if r.Scope == nil {
		return r.Period.Label
	}
	return r.Period.Label + " (" + strings.Join(r.Scope.Teams, ", ") + ")"
}

func summaryBlocks(r *Report) []slack.Block {
	head := slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "GPU chargeback "+title(r), false, false))
	cur := r.Currency
	fields := []*slack.TextBlockObject{
		slack.NewTextBlockObject(slack.MarkdownType, fmt.Sprintf("*Cost*\n%s %s (%s)", moneyText(r.Totals.Cost), cur, changeText(r.Change.Cost)), false, false),
		slack.NewTextBlockObject(slack.MarkdownType, fmt.Sprintf("*GPU-hours*\n%.2f (%s)", r.Totals.GPUHours, changeText(r.Change.GPUHours)), false, false),
		slack.NewTextBlockObject(slack.MarkdownType, fmt.Sprintf("*Idle cost*\n%s %s", moneyText(r.Totals.IdleCost), cur), false, false),
	}
	if r.Scope == nil { // unallocated capacity is the fleet's: not in a team's report
		fields = append(fields, slack.NewTextBlockObject(slack.MarkdownType, fmt.Sprintf("*Unallocated*\n%s %s", moneyText(r.Totals.UnallocatedCost), cur), false, false))
	}
	blocks := []slack.Block{head, slack.NewSectionBlock(nil, fields, nil)}
	if len(r.Teams) > 0 {
		var b strings.Builder
		for _, t := range r.Teams[:min(topTeams, len(r.Teams))] {
			fmt.Fprintf(&b, "• *%s*: %s %s, idle %s\n", t.Team, moneyText(t.Cost), cur, moneyText(t.IdleCost))
		}
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*Top teams*\n"+b.String(), false, false), nil, nil))
	}
	return blocks
}
