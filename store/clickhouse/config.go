package clickhouse

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/secure/redact"
)

// Config configures the connection to a ClickHouse server or cluster.
type Config struct {
	// Addr lists native-protocol endpoints as host:port (9000, or 9440 with TLS);
	// connections go to the first that answers.
	Addr []string `yaml:"addr"`
	// Database holds gpupool's tables; Open creates it if missing.
	Database string `yaml:"database"`
	// Username and Password authenticate; an empty Username is ClickHouse's "default".
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// PasswordFile holds the password instead (a mounted Kubernetes Secret, a file
	// readable by the service only); it is read when connecting, one trailing
	// newline dropped. Set Password or PasswordFile, not both.
	PasswordFile string `yaml:"password_file"`
	// TLS encrypts the connection. TLSCAFile (PEM) replaces the system roots, for a
	// server with a private CA; TLSInsecureSkipVerify accepts any certificate.
	TLS                   bool   `yaml:"tls"`
	TLSInsecureSkipVerify bool   `yaml:"tls_insecure_skip_verify"`
	TLSCAFile             string `yaml:"tls_ca_file"`
	// Compression of data blocks on the wire: "lz4" (default), "zstd" or "none".
	Compression string `yaml:"compression"`
	// DialTimeout bounds connecting; ReadTimeout bounds each wait for the server
	// while a statement runs. Zero means clickhouse-go's defaults (30s, 5m).
	DialTimeout time.Duration `yaml:"dial_timeout"`
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// MaxOpenConns caps the connection pool; zero means clickhouse-go's default (10).
	MaxOpenConns int `yaml:"max_open_conns"`
	// Cluster names the ClickHouse cluster whose servers all get gpupool's DDL
	// (ON CLUSTER); empty for a single server.
	Cluster string `yaml:"cluster"`
	// AsyncInsert makes inserts async inserts (async_insert=1) that still return
	// only once the data is written (wait_for_async_insert=1): the server merges
	// many small inserts into one part. ClickHouse deduplicates async inserts by
	// token only on Replicated tables (async_insert_deduplicate), so leave this off
	// on a single server where redelivered batches must be dropped.
	AsyncInsert bool `yaml:"async_insert"`
	// ReadOnly sends every query with readonly=1, so the server refuses writes
	// and setting changes (gpupool sql uses it unless --write is allowed). It
	// does not stop file(), INTO OUTFILE or KILL: gpupool sql runs users' SQL
	// through store.QueryReadOnly as well (docs/store-security.md).
	ReadOnly bool `yaml:"read_only"`
}

// DefaultConfig returns the defaults: one local server, database gpupool, LZ4.
func DefaultConfig() Config {
	return Config{
		Addr:         []string{"localhost:9000"},
		Database:     "gpupool",
		Compression:  "lz4",
		DialTimeout:  10 * time.Second,
		ReadTimeout:  5 * time.Minute,
		MaxOpenConns: 10,
	}
}

// compressions maps Config.Compression to clickhouse-go's methods; these are the
// ones both the native protocol and every supported server version speak.
var compressions = map[string]ch.CompressionMethod{
	"":     ch.CompressionLZ4,
	"lz4":  ch.CompressionLZ4,
	"zstd": ch.CompressionZSTD,
	"none": ch.CompressionNone,
}

// Validate checks the configuration. Each error starts with the yaml field at fault.
func (c Config) Validate() error {
	if len(c.Addr) == 0 {
		return schemas.Field("addr", errors.New("at least one host:port is required"))
	}
	for _, a := range c.Addr {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
			// A DSN pasted in its place holds a password: never quoted.
			return schemas.Fieldf("addr", "%q is not host:port (e.g. localhost:9000 or [::1]:9000)", redact.Addr(a))
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
			return schemas.Fieldf("addr", "%q has no valid port", redact.Addr(a))
		}
	}
	if err := (schemas.MigrationParams{DB: c.Database, RawTTLDays: 1}).Validate(); err != nil {
		return schemas.Fieldf("database", "%w", err)
	}
	// The database is valid by now, so an error here is the cluster's.
	if err := (schemas.MigrationParams{DB: c.Database, Cluster: c.Cluster, RawTTLDays: 1}).Validate(); err != nil {
		return schemas.Fieldf("cluster", "%w", err)
	}
	if _, ok := compressions[c.Compression]; !ok {
		return schemas.Fieldf("compression", "%q is not one of lz4, zstd, none", c.Compression)
	}
	if c.Password != "" && c.PasswordFile != "" {
		return schemas.Field("password_file", errors.New("set password or password_file, not both"))
	}
	if !c.TLS && c.TLSCAFile != "" {
		return schemas.Field("tls_ca_file", errors.New("set tls: true to use a CA file"))
	}
	if !c.TLS && c.TLSInsecureSkipVerify {
		return schemas.Field("tls_insecure_skip_verify", errors.New("set tls: true as well, or drop it"))
	}
	if c.DialTimeout < 0 {
		return schemas.Fieldf("dial_timeout", "%v is negative", c.DialTimeout)
	}
	if c.ReadTimeout < 0 {
		return schemas.Fieldf("read_timeout", "%v is negative", c.ReadTimeout)
	}
	if c.MaxOpenConns < 0 {
		return schemas.Fieldf("max_open_conns", "%d is negative", c.MaxOpenConns)
	}
	return nil
}

// dsnParams are the DSN query parameters ParseDSN understands. Others (ClickHouse
// settings, HTTP options, clickhouse-go pool tuning) are refused rather than
// silently dropped, since Config has nowhere to keep them.
var dsnParams = []string{
	"secure", "skip_verify", "tls_ca_file", "compress", "dial_timeout", "read_timeout",
	"max_open_conns", "username", "password", "database", "hosts", "alt_hosts",
	"cluster", "async_insert",
}

// ParseDSN reads a native-protocol DSN such as
// "clickhouse://user:pass@host1:9000,host2:9000/db?secure=true&compress=lz4" into a
// Config; what it does not name keeps DefaultConfig's value. Besides clickhouse-go's
// parameters (secure, skip_verify, compress, dial_timeout, read_timeout,
// max_open_conns) it takes cluster, async_insert and tls_ca_file. A host without a
// port gets 9000, or 9440 with secure.
func ParseDSN(dsn string) (Config, error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func parseDSN(dsn string) (Config, error) {
	cfg := DefaultConfig()
	if !strings.Contains(dsn, "://") {
		return cfg, errors.New("dsn: want clickhouse://[user[:password]@]host[:port][/database][?param=value&...]")
	}
	var rawQuery string
	if i := strings.IndexByte(dsn, '?'); i >= 0 {
		rawQuery = dsn[i+1:]
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		// url's error quotes the bad escape, which may be part of a password.
		return cfg, errors.New("dsn: query parameters are not validly URL-encoded (encode every value, the password too)")
	}
	for k := range q {
		if !slices.Contains(dsnParams, k) {
			return cfg, fmt.Errorf("dsn: parameter %q is not supported (supported: %s)", k, strings.Join(dsnParams, ", "))
		}
	}
	// clickhouse-go would keep our own parameters as query settings; it must not see them.
	own := url.Values{}
	for _, k := range []string{"cluster", "async_insert", "tls_ca_file"} {
		if q.Has(k) {
			own[k] = q[k]
			q.Del(k)
		}
	}
	base := dsn
	if i := strings.IndexByte(dsn, '?'); i >= 0 {
		base = dsn[:i]
	}
	if len(q) > 0 {
		base += "?" + q.Encode()
	}
	opts, err := ch.ParseDSN(base)
	if err != nil {
		return cfg, fmt.Errorf("dsn: %w", err)
	}
	if opts.Protocol != ch.Native {
		return cfg, errors.New("dsn: only the native protocol is supported (clickhouse://host:9000), not HTTP")
	}
	if opts.TLS != nil {
		if opts.TLS.ServerName != "" {
			return cfg, errors.New("dsn: tls_server_name is not supported")
		}
		cfg.TLS = true
		cfg.TLSInsecureSkipVerify = opts.TLS.InsecureSkipVerify
	}
	port := "9000"
	if cfg.TLS {
		port = "9440"
	}
	cfg.Addr = nil
	for _, a := range opts.Addr {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			switch {
			case !strings.Contains(a, ":"): // host
				a = net.JoinHostPort(a, port)
			case strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]"): // [IPv6]
				a = net.JoinHostPort(a[1:len(a)-1], port)
			} // anything else is left for Validate to refuse
		}
		cfg.Addr = append(cfg.Addr, a)
	}
	if opts.Auth.Database != "" {
		cfg.Database = opts.Auth.Database
	}
	cfg.Username, cfg.Password = opts.Auth.Username, opts.Auth.Password
	if q.Has("compress") {
		cfg.Compression = "none"
		if opts.Compression != nil {
			cfg.Compression = opts.Compression.Method.String()
		}
	}
	if opts.DialTimeout != 0 {
		cfg.DialTimeout = opts.DialTimeout
	}
	if opts.ReadTimeout != 0 {
		cfg.ReadTimeout = opts.ReadTimeout
	}
	if opts.MaxOpenConns != 0 {
		cfg.MaxOpenConns = opts.MaxOpenConns
	}
	cfg.Cluster = own.Get("cluster")
	cfg.TLSCAFile = own.Get("tls_ca_file")
	if own.Has("async_insert") {
		v := own.Get("async_insert")
		on, err := strconv.ParseBool(v)
		if err != nil && v != "" {
			return cfg, fmt.Errorf("dsn: async_insert=%q: want true or false", v)
		}
		cfg.AsyncInsert = on || v == ""
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("dsn: %w", err)
	}
	return cfg, nil
}

// sessionSettings go with every statement. session_timezone=UTC makes the server
// read time parameters and run date functions in UTC, as the embedded store does
// (it starts with --session_timezone=UTC), so one SQL text means the same on both
// backends. A user whose profile has readonly=1 may change no setting at all and
// so cannot use this backend; give read-only users readonly=2.
func sessionSettings() ch.Settings {
	return ch.Settings{"session_timezone": "UTC"}
}

// options turns the configuration into clickhouse-go's, reading the CA file. The
// database is left to the caller: Open connects once without it to create it.
func (c Config) options() (*ch.Options, error) {
	password, err := c.password()
	if err != nil {
		return nil, err
	}
	opts := &ch.Options{
		Protocol:     ch.Native,
		Addr:         slices.Clone(c.Addr),
		Auth:         ch.Auth{Username: c.Username, Password: password},
		Compression:  &ch.Compression{Method: compressions[c.Compression]},
		DialTimeout:  c.DialTimeout,
		ReadTimeout:  c.ReadTimeout,
		MaxOpenConns: c.MaxOpenConns,
		Settings:     sessionSettings(),
		// Name gpupool in system.query_log and system.processes.
		ClientInfo: ch.ClientInfo{Products: []struct{ Name, Version string }{{Name: "gpupool"}}},
	}
	if c.MaxOpenConns > 0 && c.MaxOpenConns < 5 {
		// clickhouse-go keeps 5 idle connections by default, more than a small pool.
		opts.MaxIdleConns = c.MaxOpenConns
	}
	if c.TLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.TLSInsecureSkipVerify}
		if c.TLSCAFile != "" {
			pem, err := os.ReadFile(c.TLSCAFile)
			if err != nil {
				return nil, fmt.Errorf("tls_ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("tls_ca_file: %s holds no PEM certificate", c.TLSCAFile)
			}
			tc.RootCAs = pool
		}
		opts.TLS = tc
	}
	return opts, nil
}

// password is Password, or the contents of PasswordFile less one trailing newline.
func (c Config) password() (string, error) {
	if c.PasswordFile == "" {
		return c.Password, nil
	}
	b, err := os.ReadFile(c.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("password_file: %w", err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	return strings.TrimSuffix(s, "\r"), nil
}
