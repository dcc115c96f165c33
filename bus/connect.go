package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/secure/redact"
)

// ClientConfig configures a connection to an external NATS server or cluster.
type ClientConfig struct {
	// URL lists servers, comma-separated ("nats://n1:4222,nats://n2:4222").
	URL string `yaml:"url"`
	// CredsFile is a NATS credentials file (JWT + NKey) for a server with
	// decentralized (operator) auth; empty for none.
	CredsFile string `yaml:"creds_file"`
	// NKeyFile holds a user nkey seed (SU…, as nk -gen user writes it) for a server
	// whose configuration lists the public key (bus.ServerConfig, bus.embedded.users);
	// empty for none.
	NKeyFile string `yaml:"nkey_file"`
	// TLS client certificate, key and CA (all optional; a tls:// URL enables TLS).
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	TLSCA   string `yaml:"tls_ca"`
	// ConnectTimeout is how long Open waits for the server to answer before it
	// reports ErrUnreachable (0: DefaultConnectTimeout).
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
}

// DefaultConnectTimeout is how long Open waits for an external NATS to answer.
const DefaultConnectTimeout = 5 * time.Second

func (c ClientConfig) connectTimeout() time.Duration {
	if c.ConnectTimeout > 0 {
		return c.ConnectTimeout
	}
	return DefaultConnectTimeout
}

// Validate checks the configuration.
func (c ClientConfig) Validate() error {
	if c.URL == "" {
		return schemas.Field("url", errors.New("empty (leave bus.url unset to use the embedded server)"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("tls_cert and tls_key: give both or neither")
	}
	if c.CredsFile != "" && c.NKeyFile != "" {
		return errors.New("creds_file and nkey_file: give one credential, not both")
	}
	if c.ConnectTimeout < 0 {
		return schemas.Fieldf("connect_timeout", "%s is negative", c.ConnectTimeout)
	}
	return nil
}

// Connect dials an external NATS with reconnects that never give up: a collector must
// outlive any NATS outage (it spools meanwhile). With a credential, replies arrive
// on the credential's own inbox (InboxPrefix), and a permissions violation is
// logged as a warning naming the subject. opts come last, so they may override
// these (a test's ErrorHandler).
func Connect(cfg ClientConfig, name string, log *slog.Logger, opts ...nats.Option) (*nats.Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "nats-client", "name", name)
	auth, err := cfg.credential()
	if err != nil {
		return nil, err
	}
	all := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.ReconnectJitter(500*time.Millisecond, 2*time.Second),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("nats disconnected", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				log.Warn("nats error", "subject", sub.Subject, "err", err)
				return
			}
			log.Warn("nats error", "err", err)
		}),
	}
	all = append(all, auth...)
	if cfg.TLSCert != "" {
		all = append(all, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	if cfg.TLSCA != "" {
		all = append(all, nats.RootCAs(cfg.TLSCA))
	}
	nc, err := nats.Connect(cfg.URL, append(all, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect %s: %w", redact.URL(cfg.URL), redact.Error(err))
	}
	return nc, nil
}

// credential returns the options that authenticate with the configured creds or
// nkey file, and put replies on that user's inbox.
func (c ClientConfig) credential() ([]nats.Option, error) {
	var opts []nats.Option
	file := c.CredsFile
	switch {
	case c.CredsFile != "":
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	case c.NKeyFile != "":
		o, err := nats.NkeyOptionFromSeed(c.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats: nkey_file %s: %w", c.NKeyFile, err)
		}
		opts, file = append(opts, o), c.NKeyFile
	default:
		return nil, nil
	}
	pub, err := userPublicKey(file)
	if err != nil {
		return nil, err
	}
	return append(opts, nats.CustomInboxPrefix(InboxPrefix(pub))), nil
}

// userPublicKey reads the public key of the user seed in a creds or nkey file.
func userPublicKey(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("nats: credential: %w", err)
	}
	defer clear(data)
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		return "", fmt.Errorf("nats: credential %s: no user seed (SU…) in it: %w", file, err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("nats: credential %s: %w", file, err)
	}
	return pub, nil
}
