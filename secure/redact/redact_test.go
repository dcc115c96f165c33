package redact

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ name, in, want, secret string }{
		{"slack webhook", "https://hooks.slack.com/services/T0001/B0002/abcdefSECRET", "https://hooks.slack.com/services/REDACTED", "abcdefSECRET"},
		{"workflow trigger", "https://hooks.slack.com/triggers/T1/123/feedSECRET", "https://hooks.slack.com/triggers/REDACTED", "feedSECRET"},
		{"dsn password", "clickhouse://gpupool:hunter2@db1:9000,db2:9000/gpupool?secure=true", "clickhouse://gpupool:REDACTED@db1:9000,db2:9000/gpupool?secure=true", "hunter2"},
		{"nats token as user", "nats://s3cr3tTOKEN@nats:4222", "nats://REDACTED@nats:4222", "s3cr3tTOKEN"},
		{"secret query", "https://api.example/x?token=abc123XYZ&limit=5", "https://api.example/x?limit=5&token=REDACTED", "abc123XYZ"},
		{"plain", "https://slack.com/api/chat.postMessage", "https://slack.com/api/chat.postMessage", ""},
		{"host port", "localhost:9000", "localhost:9000", ""},
		{"server list", "nats://u:pw1SECRET@n1:4222,nats://u:pw1SECRET@n2:4222", "nats://u:REDACTED@n1:4222,nats://u:REDACTED@n2:4222", "pw1SECRET"},
		{"dsn hosts", "clickhouse://u:pw2SECRET@h1:9000,h2:9000/db", "clickhouse://u:REDACTED@h1:9000,h2:9000/db", "pw2SECRET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := URL(tc.in)
			if got != tc.want {
				t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if tc.secret != "" && strings.Contains(got, tc.secret) {
				t.Errorf("URL(%q) = %q keeps the secret", tc.in, got)
			}
		})
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct{ name, in, secret, keep string }{
		{"net/http error", `Post "https://hooks.slack.com/services/T1/B2/webhookSECRET": dial tcp 127.0.0.1:1: connect: connection refused`, "webhookSECRET", "connection refused"},
		{"url parse error", `parse "clickhouse://u:pa ss@db:9000": invalid character " " in host name`, "pa ss", "invalid character"},
		{"addr error", `addr: "clickhouse://gpupool:hunter2@db:9000" is not host:port`, "hunter2", "is not host:port"},
		{"slack bot token", "auth failed for xoxb-1234-5678-abcdefSECRET", "abcdefSECRET", "auth failed"},
		{"gpupool token", "token gpupool_AbCdEfGhIjKlMnOpQrStUv refused", "gpupool_AbCdEfGhIjKlMnOpQrStUv", "refused"},
		{"key value dsn", "host=db user=gpupool password=hunter2 dbname=x", "hunter2", "user=gpupool"},
		{"bearer", "Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop", "Authorization"},
		{"trailing period", "posting to https://hooks.slack.com/services/T1/B2/zzzSECRET.", "zzzSECRET", "posting to https://hooks.slack.com/services/REDACTED."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := String(tc.in)
			if strings.Contains(got, tc.secret) || !strings.Contains(got, tc.keep) {
				t.Errorf("String(%q) = %q: want %q gone and %q kept", tc.in, got, tc.secret, tc.keep)
			}
		})
	}
}

func TestAddr(t *testing.T) {
	for in, want := range map[string]string{
		"db:9000":                        "db:9000",
		"gpupool:hunter2@db:9000":        "REDACTED@db:9000",
		"clickhouse://u:hunter2@db:9000": "clickhouse://u:REDACTED@db:9000",
	} {
		if got := Addr(in); got != want {
			t.Errorf("Addr(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestError: the message is masked, the chain is kept (a caller's errors.Is
// and errors.As still work), and nil stays nil.
func TestError(t *testing.T) {
	if Error(nil) != nil {
		t.Fatal("Error(nil) is not nil")
	}
	inner := &url.Error{Op: "Post", URL: "https://hooks.slack.com/services/T1/B2/innerSECRET", Err: fs.ErrNotExist}
	err := Error(fmt.Errorf("slack: webhook: %w", inner))
	if strings.Contains(err.Error(), "innerSECRET") || !strings.Contains(err.Error(), "slack: webhook: Post") {
		t.Errorf("message %q", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) || !errors.Is(err, fs.ErrNotExist) {
		t.Error("the error chain was lost")
	}
	if Error(err) != err {
		t.Error("masking twice wraps twice")
	}
}
