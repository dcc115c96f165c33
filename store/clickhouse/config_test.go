package clickhouse

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/gpupool/gpupool/store"
	"github.com/gpupool/gpupool/store/storetest"
)

func TestDefaultConfigValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string // the error's prefix; "" for no error
	}{
		{"no addr", func(c *Config) { c.Addr = nil }, "addr: at least one host:port is required"},
		{"addr without port", func(c *Config) { c.Addr = []string{"localhost"} }, "addr:"},
		{"addr with bad port", func(c *Config) { c.Addr = []string{"localhost:http"} }, "addr:"},
		{"addr with port 0", func(c *Config) { c.Addr = []string{"localhost:0"} }, "addr:"},
		{"second addr bad", func(c *Config) { c.Addr = []string{"a:9000", ":9000"} }, "addr:"},
		{"ipv6 addr", func(c *Config) { c.Addr = []string{"[::1]:9000"} }, ""},
		{"too many colons", func(c *Config) { c.Addr = []string{"[a:9000:9000]:9000"} }, "addr:"},
		{"no database", func(c *Config) { c.Database = "" }, "database:"},
		{"bad database", func(c *Config) { c.Database = "a-b" }, "database:"},
		{"bad cluster", func(c *Config) { c.Cluster = "prod; DROP" }, "cluster:"},
		{"cluster", func(c *Config) { c.Cluster = "prod_1" }, ""},
		{"bad compression", func(c *Config) { c.Compression = "gzip" }, "compression:"},
		{"zstd", func(c *Config) { c.Compression = "zstd" }, ""},
		{"none", func(c *Config) { c.Compression = "none" }, ""},
		{"empty compression means lz4", func(c *Config) { c.Compression = "" }, ""},
		{"ca file without tls", func(c *Config) { c.TLSCAFile = "/ca.pem" }, "tls_ca_file:"},
		{"skip verify without tls", func(c *Config) { c.TLSInsecureSkipVerify = true }, "tls_insecure_skip_verify:"},
		{"tls with ca", func(c *Config) { c.TLS, c.TLSCAFile = true, "/ca.pem" }, ""},
		{"negative dial timeout", func(c *Config) { c.DialTimeout = -time.Second }, "dial_timeout:"},
		{"negative read timeout", func(c *Config) { c.ReadTimeout = -time.Second }, "read_timeout:"},
		{"zero timeouts are defaults", func(c *Config) { c.DialTimeout, c.ReadTimeout = 0, 0 }, ""},
		{"negative conns", func(c *Config) { c.MaxOpenConns = -1 }, "max_open_conns:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.edit(&cfg)
			err := cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Fatalf("Validate() = %v, want an error starting %q", err, tt.want)
			}
		})
	}
}

func TestParseDSN(t *testing.T) {
	with := func(edit func(*Config)) Config {
		c := DefaultConfig()
		edit(&c)
		return c
	}
	tests := []struct {
		name string
		dsn  string
		want Config
		err  string
	}{
		{"full", "clickhouse://user:p%40ss@ch1:9000/metrics?secure=true&compress=lz4", with(func(c *Config) {
			c.Addr, c.Database, c.Username, c.Password, c.TLS = []string{"ch1:9000"}, "metrics", "user", "p@ss", true
		}), ""},
		{"host only", "clickhouse://localhost", with(func(c *Config) { c.Addr = []string{"localhost:9000"} }), ""},
		{"tcp scheme", "tcp://10.0.0.1:9001", with(func(c *Config) { c.Addr = []string{"10.0.0.1:9001"} }), ""},
		{"secure host gets 9440", "clickhouse://ch?secure", with(func(c *Config) { c.Addr, c.TLS = []string{"ch:9440"}, true }), ""},
		{"skip verify", "clickhouse://ch:9440?secure=true&skip_verify=true", with(func(c *Config) {
			c.Addr, c.TLS, c.TLSInsecureSkipVerify = []string{"ch:9440"}, true, true
		}), ""},
		{"ipv6 host gets a port", "clickhouse://[::1]/db", with(func(c *Config) { c.Addr, c.Database = []string{"[::1]:9000"}, "db" }), ""},
		{"many hosts", "clickhouse://a:9000,b:9000/db", with(func(c *Config) { c.Addr, c.Database = []string{"a:9000", "b:9000"}, "db" }), ""},
		{"alt hosts", "clickhouse://a:9000?alt_hosts=b:9000,c", with(func(c *Config) { c.Addr = []string{"a:9000", "b:9000", "c:9000"} }), ""},
		{"zstd", "clickhouse://a:9000?compress=zstd", with(func(c *Config) { c.Addr, c.Compression = []string{"a:9000"}, "zstd" }), ""},
		{"compress off", "clickhouse://a:9000?compress=false", with(func(c *Config) { c.Addr, c.Compression = []string{"a:9000"}, "none" }), ""},
		{"compress on", "clickhouse://a:9000?compress=true", with(func(c *Config) { c.Addr = []string{"a:9000"} }), ""},
		{"timeouts and pool", "clickhouse://a:9000?dial_timeout=2s&read_timeout=1m&max_open_conns=3", with(func(c *Config) {
			c.Addr, c.DialTimeout, c.ReadTimeout, c.MaxOpenConns = []string{"a:9000"}, 2*time.Second, time.Minute, 3
		}), ""},
		{"gpupool parameters", "clickhouse://a?cluster=prod&async_insert=true&secure&tls_ca_file=/etc/ca.pem", with(func(c *Config) {
			c.Addr, c.Cluster, c.AsyncInsert, c.TLS, c.TLSCAFile = []string{"a:9440"}, "prod", true, true, "/etc/ca.pem"
		}), ""},
		{"no path keeps the default database", "clickhouse://a:9000/", with(func(c *Config) { c.Addr = []string{"a:9000"} }), ""},
		{"username parameter", "clickhouse://a:9000?username=u&password=p", with(func(c *Config) {
			c.Addr, c.Username, c.Password = []string{"a:9000"}, "u", "p"
		}), ""},
		{"http refused", "http://a:8123", Config{}, "dsn: only the native protocol"},
		{"unknown parameter refused", "clickhouse://a:9000?max_execution_time=60", Config{}, `dsn: parameter "max_execution_time" is not supported`},
		{"bad async_insert", "clickhouse://a:9000?async_insert=maybe", Config{}, "dsn: async_insert"},
		{"bad database name", "clickhouse://a:9000/my-db", Config{}, "dsn: database:"},
		{"ca file without tls", "clickhouse://a:9000?tls_ca_file=/ca.pem", Config{}, "dsn: tls_ca_file:"},
		{"no host", "clickhouse:///db", Config{}, "dsn:"},
		{"no scheme", "localhost:9000", Config{}, "dsn: want clickhouse://"},
		{"bad timeout", "clickhouse://a:9000?dial_timeout=soon", Config{}, "dsn:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDSN(tt.dsn)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("ParseDSN(%q) error = %v, want one starting %q", tt.dsn, err, tt.err)
				}
				if !reflect.DeepEqual(got, Config{}) {
					t.Errorf("ParseDSN(%q) failed but returned %+v", tt.dsn, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDSN(%q): %v", tt.dsn, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseDSN(%q) =\n%+v\nwant\n%+v", tt.dsn, got, tt.want)
			}
		})
	}
}

func TestParseDSNHidesPassword(t *testing.T) {
	for _, dsn := range []string{
		"clickhouse://u:s3cret@a:9000:9000/db",
		"clickhouse://u:s3cret@a:port/db",
		"clickhouse://u:s3cret@a:9000/db?dial_timeout=soon",
		"clickhouse://a:9000/db?password=s3cret%zz",
	} {
		_, err := ParseDSN(dsn)
		if err == nil {
			t.Fatalf("malformed DSN %q parsed", dsn)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error %q shows the password", err)
		}
	}
}

func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{
		"clickhouse://user:pass@host:9000/db?secure=true&compress=lz4",
		"clickhouse://a:9000,b?alt_hosts=c:9001&cluster=x&async_insert",
		"tcp://[::1]:9000/gpupool?dial_timeout=1s",
		"clickhouse://h?tls_ca_file=/x&secure&skip_verify=1",
		"http://x", "", "://", "clickhouse://?", "clickhouse://h/%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		cfg, err := ParseDSN(dsn)
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("ParseDSN(%q) returned a config that does not validate: %v", dsn, err)
		}
		if _, err := cfg.options(); err != nil && cfg.TLSCAFile == "" {
			t.Fatalf("options() for ParseDSN(%q): %v", dsn, err)
		}
	})
}

func TestOptions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr = []string{"a:9000", "b:9000"}
	cfg.Username, cfg.Password = "u", "p"
	cfg.Compression = "zstd"
	cfg.MaxOpenConns = 2
	opts, err := cfg.options()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Protocol != ch.Native || !reflect.DeepEqual(opts.Addr, cfg.Addr) {
		t.Errorf("protocol %v addr %v", opts.Protocol, opts.Addr)
	}
	if opts.Auth.Username != "u" || opts.Auth.Password != "p" || opts.Auth.Database != "" {
		t.Errorf("auth = %+v: the database is named only once it exists", opts.Auth)
	}
	if opts.Compression == nil || opts.Compression.Method != ch.CompressionZSTD {
		t.Errorf("compression = %+v, want zstd", opts.Compression)
	}
	if opts.MaxOpenConns != 2 || opts.MaxIdleConns != 2 {
		t.Errorf("conns open %d idle %d, want 2 and 2", opts.MaxOpenConns, opts.MaxIdleConns)
	}
	if opts.Settings["session_timezone"] != "UTC" {
		t.Errorf("settings = %v, want session_timezone UTC", opts.Settings)
	}
	if opts.TLS != nil {
		t.Error("TLS set without tls: true")
	}
	if lz, _ := DefaultConfig().options(); lz.Compression.Method != ch.CompressionLZ4 {
		t.Errorf("default compression %v, want lz4", lz.Compression.Method)
	}
}

func TestOptionsTLS(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, selfSignedPEM(t), 0o600); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, caFile string
		skip         bool
		err          string
	}{
		{"system roots", "", false, ""},
		{"skip verify", "", true, ""},
		{"ca file", ca, false, ""},
		{"missing ca file", filepath.Join(dir, "none.pem"), false, "tls_ca_file:"},
		{"ca file without pem", junk, false, "tls_ca_file: " + junk + " holds no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.TLS, cfg.TLSCAFile, cfg.TLSInsecureSkipVerify = true, tt.caFile, tt.skip
			opts, err := cfg.options()
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("options() error = %v, want one starting %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.TLS == nil || opts.TLS.InsecureSkipVerify != tt.skip || (opts.TLS.RootCAs != nil) != (tt.caFile != "") {
				t.Errorf("TLS config = %+v", opts.TLS)
			}
		})
	}
}

func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestOpenInvalidConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr = nil
	if _, err := Open(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "addr: at least one host:port is required") {
		t.Fatalf("Open with no addr: err = %v", err)
	}
}

// TestOpenNoServer opens a port nothing listens on: the error must say where it
// tried and what to do.
func TestOpenNoServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cfg := DefaultConfig()
	cfg.Addr = []string{addr}
	cfg.DialTimeout = 2 * time.Second
	_, err = Open(t.Context(), cfg)
	if err == nil {
		t.Fatal("Open succeeded with no server")
	}
	for _, want := range []string{"clickhouse: ping " + addr + ":", "is the server running? set --clickhouse-addr"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestOpenNotClickHouse opens a port where something else answers (an HTTP
// server), in plain text and with TLS.
func TestOpenNotClickHouse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
			_ = c.Close()
		}
	}()
	for _, tt := range []struct {
		tls  bool
		want string
	}{
		{false, "not in ClickHouse's native protocol"},
		{true, "does not speak TLS on this port: set tls: false"},
	} {
		cfg := DefaultConfig()
		cfg.Addr = []string{l.Addr().String()}
		cfg.DialTimeout = 2 * time.Second
		cfg.TLS = tt.tls
		_, err = Open(t.Context(), cfg)
		for _, want := range []string{"clickhouse: ping " + l.Addr().String() + ":", tt.want} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Open (tls %v) against an HTTP server: err = %v, want it to say %q", tt.tls, err, want)
			}
		}
	}
}

// fakeConn is a driver.Conn whose Ping fails with err.
type fakeConn struct {
	driver.Conn
	err    error
	closed bool
}

func (f *fakeConn) Ping(context.Context) error { return f.err }
func (f *fakeConn) Close() error               { f.closed = true; return nil }

func TestPingErrors(t *testing.T) {
	tests := []struct {
		name string
		tls  bool
		err  error
		want []string
	}{
		{"refused", false, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")},
			[]string{"clickhouse: ping localhost:9000: dial tcp: connection refused (is the server running? set --clickhouse-addr)"}},
		{"wrong password", false, &ch.Exception{Code: 516, Message: "default: Authentication failed"},
			[]string{"clickhouse: connect to localhost:9000 as default:", "check the username and password"}},
		{"other server error", false, &ch.Exception{Code: 999, Message: "boom"},
			[]string{"clickhouse: ping localhost:9000: code: 999, message: boom"}},
		{"garbage reply", false, errors.New("unexpected packet 72"),
			[]string{"not in ClickHouse's native protocol", "set tls: true", "set --clickhouse-addr"}},
		{"tls to a plain port", true, fmt.Errorf("dial: %w", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}),
			[]string{"does not speak TLS on this port: set tls: false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.TLS = tt.tls
			err := ping(t.Context(), &fakeConn{err: tt.err}, cfg)
			if !errors.Is(err, tt.err) {
				t.Errorf("ping error %v does not wrap %v", err, tt.err)
			}
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("ping error = %v, want it to say %q", err, w)
				}
			}
		})
	}
}

func TestClosedStore(t *testing.T) {
	fc := &fakeConn{}
	s := &Store{cfg: DefaultConfig(), conn: fc}
	if err := s.Close(); err != nil || !fc.closed {
		t.Fatalf("Close() = %v, closed %v", err, fc.closed)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close() = %v", err)
	}
	ctx := t.Context()
	if err := s.Exec(ctx, "SELECT 1", nil); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Exec after Close: %v", err)
	}
	if _, err := s.Query(ctx, "SELECT 1", nil); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Query after Close: %v", err)
	}
	if err := s.Insert(ctx, "t", storetest.AllTypesBlock(), ""); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Insert after Close: %v", err)
	}
}

func TestInsertBadBlock(t *testing.T) {
	s := &Store{cfg: DefaultConfig(), conn: &fakeConn{}}
	a, b := store.NewUInt32("a"), store.NewUInt32("b")
	a.Append(1)
	if err := s.Insert(t.Context(), "t", store.NewBlock(a, b), ""); !errors.Is(err, store.ErrBadBlock) {
		t.Errorf("ragged block: %v, want ErrBadBlock", err)
	}
	if err := s.Insert(t.Context(), "t", store.NewBlock(), ""); !errors.Is(err, store.ErrBadBlock) {
		t.Errorf("empty block: %v, want ErrBadBlock", err)
	}
	// No rows: nothing to send, and the (fake) server is never asked.
	if err := s.Insert(t.Context(), "t", store.NewBlock(store.NewUInt32("a")), ""); err != nil {
		t.Errorf("zero rows: %v", err)
	}
}
