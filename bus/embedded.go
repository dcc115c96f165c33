package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
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
}

// DefaultEmbeddedConfig returns the embedded server's defaults.
func DefaultEmbeddedConfig() EmbeddedConfig {
	return EmbeddedConfig{DataDir: "gpupool-data/nats", Host: "127.0.0.1", Port: -1}
}

// Validate checks the configuration.
func (c EmbeddedConfig) Validate() error {
	if c.DataDir == "" {
		return errors.New("data_dir: the embedded NATS server needs a directory for JetStream")
	}
	if c.Port < -1 || c.Port > 65535 {
		return fmt.Errorf("port: %d is not a port (use -1 for any free port, 0 for in-process only)", c.Port)
	}
	if c.MaxStoreBytes < 0 {
		return fmt.Errorf("max_store_bytes: %d is negative", c.MaxStoreBytes)
	}
	return nil
}

// Server is an embedded NATS server with JetStream.
type Server struct {
	ns  *server.Server
	cfg EmbeddedConfig
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
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
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if log != nil {
		ns.SetLoggerV2(&logAdapter{log: log.With("component", "nats")}, false, false, false)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 30s (data_dir %s)", dir)
	}
	return &Server{ns: ns, cfg: cfg}, nil
}

// ClientURL is the URL other processes connect to ("" when in-process only).
func (s *Server) ClientURL() string {
	if s.cfg.Port == 0 {
		return ""
	}
	return s.ns.ClientURL()
}

// Connect opens an in-process client connection (no TCP) named name.
func (s *Server) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.Name(name), nats.InProcessServer(s.ns)}, opts...)
	nc, err := nats.Connect(s.ns.ClientURL(), opts...)
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
