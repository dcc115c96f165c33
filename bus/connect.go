package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
)

// ClientConfig configures a connection to an external NATS server or cluster.
type ClientConfig struct {
	// URL lists servers, comma-separated ("nats://n1:4222,nats://n2:4222").
	URL string `yaml:"url"`
	// CredsFile is a NATS credentials file (JWT + NKey); empty for none.
	CredsFile string `yaml:"creds_file"`
	// TLS client certificate, key and CA (all optional; a tls:// URL enables TLS).
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	TLSCA   string `yaml:"tls_ca"`
}

// Validate checks the configuration.
func (c ClientConfig) Validate() error {
	if c.URL == "" {
		return errors.New("url: empty (leave bus.url unset to use the embedded server)")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("tls_cert and tls_key: give both or neither")
	}
	return nil
}

// Connect dials an external NATS with reconnects that never give up: a collector must
// outlive any NATS outage (it spools meanwhile).
func Connect(cfg ClientConfig, name string, log *slog.Logger) (*nats.Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "nats-client", "name", name)
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.ReconnectJitter(500*time.Millisecond, 2*time.Second),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("nats disconnected", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", "url", nc.ConnectedUrl())
		}),
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.TLSCert != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect %s: %w", cfg.URL, err)
	}
	return nc, nil
}
