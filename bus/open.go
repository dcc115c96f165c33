package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/secure/redact"
)

// Config is the bus section of the configuration file: an external NATS when URL
// is set, else the embedded server; and the streams' retention either way.
type Config struct {
	ClientConfig `yaml:",inline"`
	Embedded     EmbeddedConfig `yaml:"embedded"`
	Streams      StreamsConfig  `yaml:"streams"`
}

// DefaultConfig returns the embedded server's defaults and the default retention.
func DefaultConfig() Config {
	return Config{Embedded: DefaultEmbeddedConfig(), Streams: DefaultStreamsConfig()}
}

// Validate checks the section in use (the client's with a URL, else the embedded
// server's) and the streams; each error names its field.
func (c Config) Validate() error {
	var errs []error
	if c.URL != "" {
		errs = append(errs, c.ClientConfig.Validate())
	} else {
		errs = append(errs, schemas.PrefixFields("embedded", c.Embedded.Validate()))
	}
	errs = append(errs, schemas.PrefixFields("streams", c.Streams.Validate()))
	return errors.Join(errs...)
}

// Conn is a connection to NATS JetStream, with the embedded server it started when
// the configuration names no external one.
type Conn struct {
	// Server is the embedded server; nil with an external NATS.
	Server *Server
	NC     *nats.Conn
	JS     jetstream.JetStream
	url    string
	stop   chan struct{}
	once   sync.Once
}

// OpenOption changes how Open connects.
type OpenOption func(*openOptions)

type openOptions struct{ offline bool }

// Offline lets Open return while an external NATS is unreachable, for a process
// that has somewhere else to put its data meanwhile (the collector's disk spool):
// it logs a warning naming the URL, the connection keeps trying in the
// background, and the streams are made once the server answers. Without it,
// Open fails with ErrUnreachable.
func Offline(ok bool) OpenOption { return func(o *openOptions) { o.offline = ok } }

// Open connects as name to the configured NATS, starting the embedded server when
// no URL is set, and creates or updates gpupool's streams. An external NATS that
// does not answer within its ConnectTimeout is an error wrapping ErrUnreachable
// that names the URL (unless Offline).
func Open(ctx context.Context, cfg Config, name string, log *slog.Logger, opts ...OpenOption) (*Conn, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Conn{url: redact.URL(cfg.URL), stop: make(chan struct{})} // url is for logs
	var err error
	if cfg.URL == "" {
		if c.Server, err = StartEmbedded(cfg.Embedded, log); err != nil {
			return nil, err
		}
		if c.NC, err = c.Server.Connect(name); err != nil {
			c.Close()
			return nil, err
		}
	} else if c.NC, err = Connect(cfg.ClientConfig, name, log); err != nil {
		return nil, err
	}
	if c.JS, err = jetstream.New(c.NC); err != nil {
		c.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	if cfg.URL != "" {
		if err := awaitServer(ctx, c.NC, cfg.ClientConfig); err != nil {
			if !o.offline || ctx.Err() != nil {
				c.Close()
				return nil, err
			}
			log.Warn("NATS unreachable at start; carrying on and connecting in the background", "url", redact.URL(cfg.URL), "err", err)
			go c.ensureStreamsLater(cfg.Streams, log)
			return c, nil
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := EnsureStreams(sctx, c.JS, cfg.Streams); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// awaitServer waits until nc is connected, for at most cfg's ConnectTimeout; the
// error names the URL, the last dial error and what to check.
func awaitServer(ctx context.Context, nc *nats.Conn, cfg ClientConfig) error {
	timeout := cfg.connectTimeout()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !nc.IsConnected() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("nats: connect %s: %w", redact.URL(cfg.URL), ctx.Err())
		case <-deadline.C:
			why := ""
			if err := nc.LastError(); err != nil {
				why = " (" + err.Error() + ")"
			}
			return fmt.Errorf("%w: %s did not answer within %s%s: is nats-server running there? Check bus.url in the configuration (or --nats-url / GPUPOOL_NATS_URL)",
				ErrUnreachable, redact.URL(cfg.URL), timeout, redact.String(why))
		case <-tick.C:
		}
	}
	return nil
}

// ensureStreamsLater makes the streams once the server answers, retrying until
// it succeeds or the connection is closed.
func (c *Conn) ensureStreamsLater(cfg StreamsConfig, log *slog.Logger) {
	b := DefaultBackoff()
	for failures := 0; ; {
		if c.NC.IsConnected() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := EnsureStreams(ctx, c.JS, cfg)
			cancel()
			if err == nil {
				log.Info("NATS answered; streams ready", "url", c.url)
				return
			}
			failures++
			log.Warn("streams not ready yet", "url", c.url, "err", err)
		}
		select {
		case <-c.stop:
			return
		case <-time.After(max(b.Delay(failures), time.Second)):
		}
	}
}

// Ready reports whether the connection to NATS is up (for /readyz).
func (c *Conn) Ready() error {
	if !c.NC.IsConnected() {
		return errors.New("not connected to NATS")
	}
	return nil
}

// Where says which NATS this is, for people: the external URL, or the embedded
// server and the URL other processes reach it on.
func (c *Conn) Where() string {
	if c.Server == nil {
		return c.url
	}
	if u := c.Server.ClientURL(); u != "" {
		return "embedded, " + u
	}
	return "embedded, in-process"
}

// Close drains the connection (what was published reaches the server) and stops
// the embedded server, if any.
func (c *Conn) Close() {
	if c.stop != nil {
		c.once.Do(func() { close(c.stop) })
	}
	if c.NC != nil {
		drained := make(chan struct{})
		c.NC.SetClosedHandler(func(*nats.Conn) { close(drained) })
		if err := c.NC.Drain(); err == nil {
			select {
			case <-drained:
			case <-time.After(time.Second):
			}
		}
		c.NC.Close()
	}
	if c.Server != nil {
		c.Server.Shutdown()
	}
}
