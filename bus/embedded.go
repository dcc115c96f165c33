package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/secure/fileperm"
)

// EmbeddedConfig configures the NATS server gpupool runs in-process when no external
// URL is given.
type EmbeddedConfig struct {
	// DataDir holds JetStream's streams; they survive restarts.
	DataDir string `yaml:"data_dir"`
	// Host and Port the server listens on, so collectors on other machines can
	// publish to it. Port -1 picks a free port; 0 means in-process only.
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
	// MaxStoreBytes caps JetStream's disk use (0: the server's default, a share of
	// the free disk).
	MaxStoreBytes int64 `yaml:"max_store_bytes"`
	// TLS, when enabled, is required of every client that connects over the
	// network (the process's own in-process connection needs none).
	TLS ServerTLS `yaml:"tls"`
	// Users, when set, are the only credentials the server accepts over the
	// network, each limited to its roles' subjects (docs/bus-security.md). Empty:
	// whoever reaches the port may publish and subscribe to everything.
	Users []User `yaml:"users"`
}

// DefaultEmbeddedConfig returns the embedded server's defaults.
func DefaultEmbeddedConfig() EmbeddedConfig {
	return EmbeddedConfig{DataDir: "gpupool-data/nats", Host: "127.0.0.1", Port: -1}
}

// Validate checks the configuration.
func (c EmbeddedConfig) Validate() error {
	if c.DataDir == "" {
		return schemas.Field("data_dir", errors.New("the embedded NATS server needs a directory for JetStream"))
	}
	if c.Port < -1 || c.Port > 65535 {
		return schemas.Fieldf("port", "%d is not a port (use -1 for any free port, 0 for in-process only)", c.Port)
	}
	if c.MaxStoreBytes < 0 {
		return schemas.Fieldf("max_store_bytes", "%d is negative", c.MaxStoreBytes)
	}
	errs := []error{schemas.PrefixFields("tls", c.TLS.Validate())}
	for i, u := range c.Users {
		errs = append(errs, schemas.PrefixFields(fmt.Sprintf("users[%d]", i), u.Validate()))
	}
	return errors.Join(errs...)
}

// Server is an embedded NATS server with JetStream.
type Server struct {
	ns  *server.Server
	cfg EmbeddedConfig
	// self is the key the process's own connections authenticate with when the
	// server has users: an admin made at start, held only in memory.
	self nkeys.KeyPair
}

// StartEmbedded starts a NATS server with JetStream on cfg.DataDir and waits until it
// accepts connections.
func StartEmbedded(cfg EmbeddedConfig, log *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: data_dir: %w", err)
	}
	if err := fileperm.MkdirAll(dir, log); err != nil { // 0700: the streams hold every sample
		return nil, fmt.Errorf("embedded nats: create data_dir: %w", err)
	}
	opts := &server.Options{
		ServerName:         "gpupool-embedded",
		Host:               cfg.Host,
		Port:               cfg.Port,
		DontListen:         cfg.Port == 0,
		JetStream:          true,
		StoreDir:           dir,
		JetStreamMaxStore:  cfg.MaxStoreBytes,
		NoSigs:             true,
		NoLog:              true,
		MaxPayload:         8 << 20,
		JetStreamMaxMemory: 256 << 20,
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	self, err := secure(opts, cfg)
	if err != nil {
		return nil, err
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if log != nil {
		ns.SetLoggerV2(&logAdapter{log: log.With("component", "nats")}, false, false, false)
		if len(cfg.Users) == 0 && !opts.DontListen && !isLoopback(opts.Host) {
			log.Warn("embedded NATS listens beyond this machine without users: whoever reaches it may publish samples and findings (set bus.embedded.users, see docs/bus-security.md)",
				"host", opts.Host, "port", cfg.Port)
		}
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 30s (data_dir %s)", dir)
	}
	return &Server{ns: ns, cfg: cfg, self: self}, nil
}

// secure applies cfg's TLS and users to opts, with an admin for the process's
// own connections when there are users, and returns that admin's key.
func secure(opts *server.Options, cfg EmbeddedConfig) (nkeys.KeyPair, error) {
	if len(cfg.Users) == 0 && !cfg.TLS.Enabled() {
		return nil, nil
	}
	users := cfg.Users
	var self nkeys.KeyPair
	if len(users) > 0 {
		var err error
		if self, err = nkeys.CreateUser(); err != nil {
			return nil, fmt.Errorf("embedded nats: make the process's own key: %w", err)
		}
		pub, err := self.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("embedded nats: make the process's own key: %w", err)
		}
		users = append(slices.Clip(users), User{Name: "this process (in-process connections)", NKey: pub, Roles: []Role{RoleAdmin}})
	}
	text, err := securityConfig(cfg.TLS, users)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if err := opts.ProcessConfigString(text); err != nil {
		var perr interface{ Errors() []error }
		if !errors.As(err, &perr) || len(perr.Errors()) > 0 {
			return nil, fmt.Errorf("embedded nats: users and tls: %w", err)
		}
	}
	return self, nil
}

// isLoopback reports whether host only accepts connections from this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ClientURL is the URL other processes connect to ("" when in-process only).
func (s *Server) ClientURL() string {
	if s.cfg.Port == 0 {
		return ""
	}
	return s.ns.ClientURL()
}

// Connect opens an in-process client connection (no TCP) named name; with users,
// it authenticates as the server's own admin.
func (s *Server) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	base := []nats.Option{nats.Name(name), nats.InProcessServer(s.ns)}
	if s.self != nil {
		pub, err := s.self.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("embedded nats: connect %s: %w", name, err)
		}
		base = append(base, nats.Nkey(pub, s.self.Sign))
	}
	opts = append(base, opts...)
	// An in-process connection needs no TLS: a tls:// URL would ask for it.
	nc, err := nats.Connect(strings.Replace(s.ns.ClientURL(), "tls://", "nats://", 1), opts...)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: connect %s: %w", name, err)
	}
	return nc, nil
}

// Shutdown stops the server and waits for it to finish.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// logAdapter sends the NATS server's log lines to slog.
type logAdapter struct{ log *slog.Logger }

func (l *logAdapter) Noticef(format string, v ...any) {
	l.log.Debug("nats server", "line", fmt.Sprintf(format, v...))
}
func (l *logAdapter) Warnf(format string, v ...any)  { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l *logAdapter) Fatalf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }
func (l *logAdapter) Errorf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }
func (l *logAdapter) Debugf(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *logAdapter) Tracef(format string, v ...any) {}
