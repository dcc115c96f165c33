package agentwire

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzOpen feeds Open arbitrary bytes, beside well-formed sealed commands and
// their mutations: it never panics, an error is one of the three kinds a caller
// tells apart, and a command it accepts verifies, names its node and is fresh.
func FuzzOpen(f *testing.F) {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	key := PrivateKey{key: priv}
	pub := PublicKeys{priv.Public().(ed25519.PublicKey)}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	good := Command{ID: "c1", Nonce: "n1", Cluster: "c", Node: "n", Action: ActionTerminate, PID: 42, GraceSeconds: 30, IssuedAt: now}
	for _, c := range []Command{good, {ID: "c2", Cluster: "c", Node: "n", Action: ActionKill, PID: 1, IssuedAt: now.Add(-time.Hour)}} {
		data, err := Seal(c, key)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add([]byte(strings.Replace(string(data), `"pid":42`, `"pid":43`, 1)))
	}
	hmac, err := Seal(good, SharedSecret("0123456789abcdef"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "{}", `{"command":null}`, `{"command":{},"alg":"ed25519","signature":"zz"}`, string(hmac)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, err := Open(data, pub, now, time.Minute)
		if err != nil {
			if !errors.Is(err, ErrBadCommand) && !errors.Is(err, ErrBadSignature) && !errors.Is(err, ErrStale) {
				t.Fatalf("Open: an error of no kind: %v", err)
			}
			return
		}
		if cmd.ID == "" || cmd.Nonce == "" || cmd.Node == "" || cmd.PID == 0 || (cmd.Action != ActionKill && cmd.Action != ActionTerminate) {
			t.Fatalf("Open accepted an incomplete command: %+v", cmd)
		}
		if d := now.Sub(cmd.IssuedAt); d > time.Minute || d < -time.Minute {
			t.Fatalf("Open accepted a stale command: %+v", cmd)
		}
	})
}
