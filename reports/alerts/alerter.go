package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/secure/redact"
)

// Route sends a team's alerts to a channel (bot token) or a webhook.
type Route struct {
	Team       string `yaml:"team"`
	Channel    string `yaml:"channel"`
	WebhookURL string `yaml:"webhook_url"`
}

// Config configures Slack alerting. Give a webhook URL or a bot token.
type Config struct {
	// WebhookURL is the default incoming webhook.
	WebhookURL string `yaml:"webhook_url"`
	// BotTokenFile holds a bot token (xoxb-…), which lets alerts be edited as
	// findings escalate and resolve.
	BotTokenFile string `yaml:"bot_token_file"`
	// APIURL is Slack's Web API root (tests and Enterprise Grid set it).
	APIURL string `yaml:"api_url"`
	// DefaultChannel receives alerts of teams without a route (bot token).
	DefaultChannel string  `yaml:"default_channel"`
	Routes         []Route `yaml:"routes"`
	// Kinds are the finding kinds alerted; by default those whose descriptor says
	// AlertByDefault (idle, zombie, wrong_card): other hints are left to reports.
	Kinds []schemas.FindingKind `yaml:"kinds"`
	// ChannelInterval spaces messages to one channel (Slack allows about one a
	// second).
	ChannelInterval time.Duration `yaml:"channel_interval"`
	// MaxBackoff caps the wait before retrying a failed post.
	MaxBackoff time.Duration `yaml:"max_backoff"`
	// Durable is the JetStream consumer; StateBucket records what was sent.
	Durable     string `yaml:"durable"`
	StateBucket string `yaml:"state_bucket"`
}

// DefaultConfig returns alerting defaults (no destination: alerts are logged only).
func DefaultConfig() Config {
	return Config{
		APIURL: "https://slack.com/api/", Kinds: alertedByDefault(),
		ChannelInterval: time.Second, MaxBackoff: 5 * time.Minute,
		Durable: "gpupool-slack", StateBucket: "gpupool_alerts",
	}
}

// Enabled reports whether any destination is configured.
func (c Config) Enabled() bool {
	return c.WebhookURL != "" || c.BotTokenFile != "" || len(c.Routes) > 0
}

// Validate checks the configuration, naming the field.
func (c Config) Validate() error {
	if c.WebhookURL != "" && c.BotTokenFile != "" {
		return errors.New("webhook_url and bot_token_file: give one")
	}
	if c.BotTokenFile != "" && c.DefaultChannel == "" {
		return errors.New("default_channel: needed with a bot token, for teams without a route")
	}
	for i, r := range c.Routes {
		if r.Team == "" {
			return fmt.Errorf("routes[%d].team: empty", i)
		}
		if (r.Channel == "") == (r.WebhookURL == "") {
			return fmt.Errorf("routes[%d]: give a channel (bot token) or a webhook_url", i)
		}
		if r.Channel != "" && c.BotTokenFile == "" {
			return fmt.Errorf("routes[%d].channel: channels need bot_token_file; use webhook_url with webhooks", i)
		}
	}
	if c.ChannelInterval < 0 || c.MaxBackoff < time.Second {
		return errors.New("channel_interval must be ≥ 0 and max_backoff ≥ 1s")
	}
	if c.Durable == "" || c.StateBucket == "" {
		return errors.New("durable and state_bucket: must be set")
	}
	return nil
}

// sentState is what reached Slack for one finding episode.
type sentState struct {
	Dest   string   `json:"dest"`
	TS     string   `json:"ts,omitempty"`
	Events []string `json:"events"`
}

// Alerter delivers alerts from JetStream to Slack.
type Alerter struct {
	cfg     Config
	js      jetstream.JetStream
	send    sender
	log     *slog.Logger
	now     func() time.Time
	metrics *Metrics

	lastPost map[string]time.Time
	backoff  time.Duration
}

// Option changes an Alerter.
type Option func(*Alerter)

// WithLogger sets the logger (default, or nil: nothing is logged).
func WithLogger(log *slog.Logger) Option {
	return func(a *Alerter) {
		if log != nil {
			a.log = log.With("component", "alerts")
		}
	}
}

// WithMetrics sets the metrics, made with NewMetrics (default, or nil: metrics
// registered nowhere).
func WithMetrics(m *Metrics) Option {
	return func(a *Alerter) {
		if m != nil {
			a.metrics = m
		}
	}
}

// WithHTTPClient sets the client for Slack calls.
func WithHTTPClient(c *http.Client) Option {
	return func(a *Alerter) {
		switch s := a.send.(type) {
		case webhookSender:
			s.client = c
			a.send = s
		case botSender:
			a.send = botSender{api: slack.New(a.token(), slack.OptionHTTPClient(c), slack.OptionAPIURL(a.cfg.APIURL)), now: a.now}
		}
	}
}

func (a *Alerter) token() string {
	data, err := os.ReadFile(a.cfg.BotTokenFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// New returns an alerter reading from js.
func New(cfg Config, js jetstream.JetStream, opts ...Option) (*Alerter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	if !cfg.Enabled() {
		return nil, errors.New("alerts: no webhook_url, bot_token_file or routes: nowhere to send")
	}
	a := &Alerter{cfg: cfg, js: js, log: slog.New(slog.DiscardHandler), now: time.Now, metrics: NewMetrics(nil), lastPost: map[string]time.Time{}}
	if cfg.BotTokenFile != "" {
		tok := a.token()
		if tok == "" {
			return nil, fmt.Errorf("alerts: bot_token_file %s is empty or unreadable", cfg.BotTokenFile)
		}
		a.send = botSender{api: slack.New(tok, slack.OptionAPIURL(cfg.APIURL)), now: a.now}
	} else {
		a.send = webhookSender{client: &http.Client{Timeout: 15 * time.Second}, now: a.now}
	}
	for _, o := range opts {
		o(a)
	}
	return a, nil
}

// destination is where a team's alerts go.
func (a *Alerter) destination(team string) string {
	for _, r := range a.cfg.Routes {
		if r.Team == team {
			if r.WebhookURL != "" {
				return r.WebhookURL
			}
			return r.Channel
		}
	}
	if a.cfg.WebhookURL != "" {
		return a.cfg.WebhookURL
	}
	return a.cfg.DefaultChannel
}

// Run delivers alerts until ctx ends.
func (a *Alerter) Run(ctx context.Context) error {
	kv, err := a.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: a.cfg.StateBucket, Description: "gpupool alerts: what reached Slack per finding episode",
		History: 1, TTL: 30 * 24 * time.Hour, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return fmt.Errorf("alerts: state bucket: %w", err)
	}
	cons, err := a.js.CreateOrUpdateConsumer(ctx, bus.StreamFindings, jetstream.ConsumerConfig{
		Durable: a.cfg.Durable, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxDeliver: -1,
		Description: "gpupool Slack alerts",
	})
	if err != nil {
		return fmt.Errorf("alerts: consumer: %w", err)
	}
	for ctx.Err() == nil {
		batch, err := cons.Fetch(16, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			a.log.Warn("fetch failed", "err", err)
			sleepCtx(ctx, time.Second)
			continue
		}
		for m := range batch.Messages() {
			a.handle(ctx, kv, m)
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// stateKey is the finding episode a message belongs to, as the state bucket keys
// it: a finding that resolved and came back is a new episode, and a new Slack
// message.
func stateKey(m *schemas.FindingMessage) string {
	return fmt.Sprintf("%s-%d", m.Finding.ID, m.Finding.Episode)
}

// eventID names one event of a finding episode, so a redelivered message is known.
func eventID(m *schemas.FindingMessage) string {
	if m.Notice != nil {
		return fmt.Sprintf("%s:%s@%d", m.Event, m.Notice.NextAction, m.Notice.NextAt.UnixMilli())
	}
	return fmt.Sprintf("%s@%d", m.Event, m.Finding.UpdatedAt.UnixMilli())
}

// handle delivers one message: acked once Slack has it (or it is filtered out or
// already delivered), retried later otherwise.
func (a *Alerter) handle(ctx context.Context, kv jetstream.KeyValue, m jetstream.Msg) {
	al, err := schemas.DecodeFindingMessage(m.Data())
	if err != nil {
		a.log.Error("undecodable alert dropped", "subject", m.Subject(), "err", err)
		a.metrics.dropped.Inc()
		_ = m.Term()
		return
	}
	if al.Finding.Kind != "" && !slices.Contains(a.cfg.Kinds, al.Finding.Kind) {
		_ = m.Ack()
		return
	}
	key := stateKey(al)
	var st sentState
	if e, err := kv.Get(ctx, key); err == nil {
		_ = json.Unmarshal(e.Value(), &st)
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		a.retry(m, 0, fmt.Errorf("read state: %w", err))
		return
	}
	ev := eventID(al)
	if slices.Contains(st.Events, ev) {
		a.metrics.duplicates.Inc()
		_ = m.Ack()
		return
	}
	dest := st.Dest
	if dest == "" {
		dest = a.destination(al.Finding.Team)
	}
	if wait := a.cfg.ChannelInterval - a.now().Sub(a.lastPost[dest]); wait > 0 {
		sleepCtx(ctx, wait)
	}
	prev := ""
	if a.send.updates() {
		prev = st.TS
	}
	ts, err := a.send.send(ctx, dest, al, prev)
	a.lastPost[dest] = a.now()
	if err != nil {
		after, ok := retryAfter(err)
		if !ok {
			a.log.Error("Slack refused an alert; holding it (fix the configuration)", "finding", key, "dest", redact.URL(dest), "err", redact.Error(err))
			after = a.cfg.MaxBackoff
		}
		a.retry(m, after, err)
		return
	}
	a.backoff = 0
	st.Dest, st.Events = dest, append(st.Events, ev)
	if ts != "" {
		st.TS = ts
	}
	data, _ := json.Marshal(st)
	if _, err := kv.Put(ctx, key, data); err != nil {
		a.log.Warn("sent but not recorded: a redelivery could send it twice", "finding", key, "err", err)
	}
	a.metrics.sent.WithLabelValues(string(al.Finding.Kind), string(al.Event)).Inc()
	if err := m.Ack(); err != nil {
		a.log.Warn("ack failed", "finding", key, "err", err)
	}
}

// retry leaves the message to JetStream for later: after Slack's Retry-After, or a
// doubling backoff.
func (a *Alerter) retry(m jetstream.Msg, after time.Duration, err error) {
	if after <= 0 {
		a.backoff = min(max(2*a.backoff, time.Second), a.cfg.MaxBackoff)
		after = a.backoff
	}
	a.metrics.retries.Inc()
	a.log.Warn("alert not delivered, retrying", "after", after, "err", redact.Error(err))
	_ = m.NakWithDelay(after)
}

// Metrics are the alerter's Prometheus metrics.
type Metrics struct {
	sent       *prometheus.CounterVec
	retries    prometheus.Counter
	duplicates prometheus.Counter
	dropped    prometheus.Counter
}

// NewMetrics creates and registers (reg may be nil) the alerter's metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpupool_alerts_sent_total", Help: "Alerts Slack accepted, by finding kind and event.",
		}, []string{"kind", "event"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_alerts_retries_total", Help: "Alert deliveries postponed (Slack rate limit, error or outage).",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_alerts_duplicates_total", Help: "Redelivered alerts already sent, skipped.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpupool_alerts_dropped_total", Help: "Messages that are not alerts (undecodable), dropped.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.sent, m.retries, m.duplicates, m.dropped)
	}
	return m
}

// alertedByDefault lists the kinds whose descriptor says AlertByDefault.
func alertedByDefault() []schemas.FindingKind {
	var out []schemas.FindingKind
	for _, d := range schemas.KindInfos() {
		if d.AlertByDefault {
			out = append(out, d.Kind)
		}
	}
	return out
}
