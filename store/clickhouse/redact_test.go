package clickhouse

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// TestAttackDSNPasswordNotLogged: a store that fails to open — a DSN pasted
// where an address belongs, a server that cannot be reached with a password
// set, a DSN that does not parse — says so, in its error (which gpupool prints
// and services log) and its log lines, without the password.
func TestAttackDSNPasswordNotLogged(t *testing.T) {
	const password = "hunter2DSNsecret"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close() // nothing listens: connection refused

	for _, tc := range []struct {
		name string
		cfg  func() Config
		want string
	}{
		{"dsn as addr", func() Config {
			c := DefaultConfig()
			c.Addr = []string{"clickhouse://gpupool:" + password + "@db.example:9000/gpupool"}
			return c
		}, "is not host:port"},
		{"user info in addr", func() Config {
			c := DefaultConfig()
			c.Addr = []string{"gpupool:" + password + "@db.example:x"}
			return c
		}, "addr:"},
		{"unreachable with a password", func() Config {
			c := DefaultConfig()
			c.Addr, c.Username, c.Password, c.DialTimeout = []string{closed}, "gpupool", password, 2*time.Second
			return c
		}, closed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := Open(ctx, tc.cfg(), WithLogger(log))
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			// As a service logs it.
			log.Error("store open failed", "err", err)
			out := logs.String()
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say what failed (%q)", err, tc.want)
			}
			if strings.Contains(out, password) || strings.Contains(err.Error(), password) {
				t.Errorf("the password was logged:\n%s", out)
			}
		})
	}
	t.Run("dsn that does not parse", func(t *testing.T) {
		_, err := ParseDSN("clickhouse://gpupool:" + password + "@db.example:port/gpupool")
		if err == nil || strings.Contains(err.Error(), password) {
			t.Errorf("ParseDSN = %v: want an error without the password", err)
		}
	})
}
