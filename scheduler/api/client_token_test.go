package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// tokenSink is a real HTTP listener on 127.0.0.1 that records the bearer tokens
// it receives; dial reaches it whatever host name a URL gives, as a resolver
// pointing that name here would.
type tokenSink struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

func newTokenSink(t *testing.T) *tokenSink {
	t.Helper()
	s := &tokenSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, r.Header.Get("Authorization"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"queues":[]}`))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *tokenSink) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, s.srv.Listener.Addr().String())
}

func (s *tokenSink) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// TestAttackAdminTokenStaysLocal: the CLI finds the admin token in the data
// directory and is given a scheduler URL; the token reaches a scheduler on this
// machine only, and no token goes over plain http:// beyond it without
// --insecure. A refusal sends nothing: the listener, reached under any host name,
// never sees the token.
func TestAttackAdminTokenStaysLocal(t *testing.T) {
	adminFile := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(adminFile, []byte("tok-admin-from-the-data-dir\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	teamFile := filepath.Join(t.TempDir(), "team.token")
	if err := os.WriteFile(teamFile, []byte("tok-team-given\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := Credentials{DefaultTokenFile: adminFile}
	given := Credentials{TokenFile: teamFile, DefaultTokenFile: adminFile}
	for _, tc := range []struct {
		name string
		host string // the URL's host; the connection reaches the sink whatever it is
		cr   Credentials
		want string // the Authorization header that arrives; "" when refused
	}{
		{"data dir's admin token to another host", "scheduler.example.com", dataDir, ""},
		{"data dir's admin token to another host, --insecure", "scheduler.example.com", Credentials{DefaultTokenFile: adminFile, Insecure: true}, ""},
		{"data dir's admin token to a host name resolving here", "sched.internal", dataDir, ""},
		{"data dir's admin token to a non-loopback address", "10.0.0.7", dataDir, ""},
		{"a given token over plain http to another host", "scheduler.example.com", given, ""},
		{"a given token over plain http to another host, --insecure", "scheduler.example.com",
			Credentials{TokenFile: teamFile, DefaultTokenFile: adminFile, Insecure: true}, "Bearer tok-team-given"},
		{"data dir's admin token to 127.0.0.1", "127.0.0.1", dataDir, "Bearer tok-admin-from-the-data-dir"},
		{"data dir's admin token to localhost", "localhost", dataDir, "Bearer tok-admin-from-the-data-dir"},
		{"data dir's admin token to ::1", "[::1]", dataDir, "Bearer tok-admin-from-the-data-dir"},
		{"a given token over plain http to 127.0.0.1", "127.0.0.1", given, "Bearer tok-team-given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := newTokenSink(t)
			url := "http://" + tc.host + ":9470"
			c, err := Dial(url, tc.cr, WithDialContext(sink.dial))
			if err == nil {
				_, err = c.Queues(t.Context())
			}
			got := sink.received()
			if tc.want == "" {
				if !errors.Is(err, ErrTokenNotSent) {
					t.Errorf("Dial %s: err = %v, want ErrTokenNotSent", url, err)
				}
				if len(got) > 0 {
					t.Errorf("the listener behind %s received %q", url, got)
				}
				return
			}
			if err != nil || len(got) != 1 || got[0] != tc.want {
				t.Errorf("Dial %s: err %v, received %q; want %q", url, err, got, tc.want)
			}
		})
	}
}

// TestTokenDestination: the decision alone, https included.
func TestTokenDestination(t *testing.T) {
	for _, tc := range []struct {
		url                          string
		hasToken, fromData, insecure bool
		ok                           bool
	}{
		{"https://scheduler.example.com", true, true, false, false},
		{"https://scheduler.example.com", true, false, false, true},
		{"http://scheduler.example.com", true, false, false, false},
		{"http://scheduler.example.com", true, false, true, true},
		{"http://scheduler.example.com", false, false, false, true}, // no token: nothing to leak
		{"http://127.0.0.2:9470", true, true, false, true},
		{"http://[::ffff:127.0.0.1]:9470", true, true, false, true},
		{"http://localhost.:9470", true, true, false, true},
		{"http://127.0.0.1.example.com:9470", true, true, false, false},
		{"http://localhost.example.com:9470", true, false, false, false},
		{"http://0.0.0.0:9470", true, true, false, false},
	} {
		err := tokenDestination(tc.url, tc.hasToken, tc.fromData, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("%s token=%t data=%t insecure=%t: %v, want ok %t", tc.url, tc.hasToken, tc.fromData, tc.insecure, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), tc.url) {
			t.Errorf("%s: error %q does not name the URL", tc.url, err)
		}
	}
}
