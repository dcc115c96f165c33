package alerts

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/slack-go/slack"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/secure/redact"
)

// sender delivers one finding message to one destination. prevTS is the Slack timestamp of the
// finding's earlier message ("" when there is none); the result is the timestamp of
// the message now carrying the alert ("" when the transport does not say).
type sender interface {
	send(ctx context.Context, dest string, m *schemas.FindingMessage, prevTS string) (ts string, err error)
	// updates reports whether later events can edit the first message.
	updates() bool
}

// webhookSender posts to incoming webhooks; dest is the webhook URL. Webhooks cannot
// edit messages, so each event is its own message.
type webhookSender struct {
	client *http.Client
	now    func() time.Time
}

func (w webhookSender) updates() bool { return false }

func (w webhookSender) send(ctx context.Context, url string, m *schemas.FindingMessage, _ string) (string, error) {
	msg := &slack.WebhookMessage{Text: Text(m), Blocks: &slack.Blocks{BlockSet: Blocks(m, w.now())}}
	// The webhook URL is the credential, and net/http's errors quote it
	// (*url.Error): it never leaves here unmasked.
	return "", redact.Error(slack.PostWebhookCustomHTTPContext(ctx, url, w.client, msg))
}

// botSender posts with a bot token (chat.postMessage), and edits the first message
// on later events (chat.update); dest is a channel.
type botSender struct {
	api *slack.Client
	now func() time.Time
}

func (b botSender) updates() bool { return true }

func (b botSender) send(ctx context.Context, channel string, m *schemas.FindingMessage, prevTS string) (string, error) {
	opts := []slack.MsgOption{slack.MsgOptionText(Text(m), false), slack.MsgOptionBlocks(Blocks(m, b.now())...)}
	if prevTS != "" {
		_, ts, _, err := b.api.UpdateMessageContext(ctx, channel, prevTS, opts...)
		if err == nil {
			return ts, nil
		}
		err = redact.Error(err)
		var se slack.SlackErrorResponse
		if !errors.As(err, &se) || (se.Err != "message_not_found" && se.Err != "cant_update_message") {
			return "", err
		}
		// The original is gone or too old to edit: post anew.
	}
	_, ts, err := b.api.PostMessageContext(ctx, channel, opts...)
	return ts, redact.Error(err)
}

// retryAfter says whether err is worth retrying and after how long: Slack's own
// Retry-After for 429, a backoff hint (0) for 5xx and network errors.
func retryAfter(err error) (time.Duration, bool) {
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return rl.RetryAfter, true
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		return 0, sc.Retryable()
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return 0, true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return 0, true
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout":
			return 0, true
		}
		return 0, false
	}
	// Anything else (a transport error without a type) is treated as temporary.
	return 0, true
}
