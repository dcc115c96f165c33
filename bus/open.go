package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/schemas"
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
}

// Open connects as name to the configured NATS, starting the embedded server when
// no URL is set, and creates or updates gpupool's streams.
func Open(ctx context.Context, cfg Config, name string, log *slog.Logger) (*Conn, error) {
	c := &Conn{url: cfg.URL}
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
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := EnsureStreams(sctx, c.JS, cfg.Streams); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
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
