package auth

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigValidate names the failing field.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"default", func(*Config) {}, ""},
		{"mode", func(c *Config) { c.Mode = "open" }, "mode:"},
		{"rate", func(c *Config) { c.RateLimit = -1 }, "rate_limit:"},
		{"burst", func(c *Config) { c.RateBurst = 0 }, "rate_limit:"},
		{"no rate", func(c *Config) { c.RateLimit, c.RateBurst = 0, 0 }, ""},
		{"body", func(c *Config) { c.MaxBodyBytes = 0 }, "max_body_bytes:"},
		{"issuer", func(c *Config) { c.OIDC.Issuer, c.OIDC.ClientID = "idp.example.com", "gpupool" }, "oidc.issuer:"},
		{"client id", func(c *Config) { c.OIDC.Issuer = "https://idp.example.com" }, "oidc.client_id:"},
		{"group role", func(c *Config) { c.OIDC.Groups = map[string][]string{"ml": {"superuser"}} }, "oidc.groups.ml:"},
		{"cert without key", func(c *Config) { c.TLS.CertFile = "c.pem" }, "tls: cert_file and key_file"},
		{"client ca without tls", func(c *Config) { c.TLS.ClientCAFile = "ca.pem" }, "tls.client_ca_file:"},
		{"client role", func(c *Config) { c.TLS.ClientRoles = map[string][]string{"n1": {"team:"}} }, "tls.client_roles.n1:"},
		{"ou role", func(c *Config) { c.TLS.OURoles = OURoles{"ml": {"root"}} }, "tls.ou_roles.ml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	c := DefaultConfig()
	c.Resolve("/var/lib/gpupool")
	if c.TokensFile != filepath.Join("/var/lib/gpupool", "auth", "tokens") || c.AdminTokenFile != filepath.Join("/var/lib/gpupool", "auth", "admin.token") {
		t.Errorf("Resolve: %q %q", c.TokensFile, c.AdminTokenFile)
	}
}

// TestCheckListen: no auth only on loopback, no TLS only on loopback unless
// insecure, with a warning for each weak setting allowed.
func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		name, addr string
		edit       func(*Config)
		err, warn  string
	}{
		{"loopback", "127.0.0.1:9470", func(*Config) {}, "", ""},
		{"localhost", "localhost:9470", func(*Config) {}, "", ""},
		{"ipv6 loopback", "[::1]:9470", func(*Config) {}, "", ""},
		{"none on loopback", "127.0.0.1:9470", func(c *Config) { c.Mode = ModeNone }, "", "auth.mode none"},
		{"none on all interfaces", ":9470", func(c *Config) { c.Mode = ModeNone }, "auth.mode none on :9470", ""},
		{"none on a LAN address", "10.0.0.5:9470", func(c *Config) { c.Mode, c.Insecure = ModeNone, true }, "auth.mode none on", ""},
		{"no tls on all interfaces", "0.0.0.0:9470", func(*Config) {}, "listen 0.0.0.0:9470 without TLS", ""},
		{"no tls, a host name", "sched.example.com:9470", func(*Config) {}, "listen sched.example.com:9470 without TLS", ""},
		{"insecure", "0.0.0.0:9470", func(c *Config) { c.Insecure = true }, "", "auth.insecure"},
		{"tls", "0.0.0.0:9470", func(c *Config) { c.TLS.CertFile, c.TLS.KeyFile = "c", "k" }, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			warns, err := c.CheckListen(tc.addr)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tc.err)) {
				t.Fatalf("CheckListen(%s) = %v, want %q", tc.addr, err, tc.err)
			}
			if got := strings.Join(warns, "; "); (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) {
				t.Errorf("warnings %q, want %q", got, tc.warn)
			}
		})
	}
}
