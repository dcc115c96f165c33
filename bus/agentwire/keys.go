package agentwire

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
)

// Signing algorithms, as a command envelope names them.
const (
	// AlgEd25519 is the scheduler's ed25519 private key, checked by every agent
	// with the public key: no node can sign a command. The default for new setups.
	AlgEd25519 = "ed25519"
	// AlgHMACSHA256 is a secret shared by the scheduler and every agent: any node
	// holding it can sign commands for every other node. Kept for the setups that
	// use it.
	AlgHMACSHA256 = "hmac-sha256"
)

// Signer signs the bytes of a command: the scheduler's PrivateKey, or a
// SharedSecret.
type Signer interface {
	Alg() string
	Sign(body []byte) []byte
}

// Verifier checks a command's signature: the scheduler's PublicKeys, or a
// SharedSecret.
type Verifier interface {
	Alg() string
	Verify(body, sig []byte) bool
}

var (
	_ Signer   = PrivateKey{}
	_ Verifier = PublicKeys{}
	_ Signer   = SharedSecret{}
	_ Verifier = SharedSecret{}
)

// PrivateKey is the scheduler's ed25519 key; it signs commands.
type PrivateKey struct{ key ed25519.PrivateKey }

// Alg returns AlgEd25519.
func (PrivateKey) Alg() string { return AlgEd25519 }

// Sign signs body.
func (k PrivateKey) Sign(body []byte) []byte { return ed25519.Sign(k.key, body) }

// Public returns the key agents check signatures with.
func (k PrivateKey) Public() ed25519.PublicKey { return k.key.Public().(ed25519.PublicKey) }

// PublicKeys are the scheduler keys an agent accepts: one, or two while the
// scheduler's key is replaced.
type PublicKeys []ed25519.PublicKey

// Alg returns AlgEd25519.
func (PublicKeys) Alg() string { return AlgEd25519 }

// Verify reports whether one of the keys signed body.
func (k PublicKeys) Verify(body, sig []byte) bool {
	for _, pub := range k {
		if ed25519.Verify(pub, body, sig) {
			return true
		}
	}
	return false
}

// SharedSecret is a secret shared by the scheduler and the agents (HMAC-SHA256).
type SharedSecret []byte

// Alg returns AlgHMACSHA256.
func (SharedSecret) Alg() string { return AlgHMACSHA256 }

// Sign returns the HMAC of body.
func (s SharedSecret) Sign(body []byte) []byte {
	m := hmac.New(sha256.New, s)
	m.Write(body)
	return m.Sum(nil)
}

// Verify reports whether sig is the HMAC of body.
func (s SharedSecret) Verify(body, sig []byte) bool { return hmac.Equal(s.Sign(body), sig) }

// LoadPrivateKey reads the scheduler's ed25519 private key: a PEM "PRIVATE KEY"
// (PKCS #8), as `openssl genpkey -algorithm ed25519` writes it.
func LoadPrivateKey(path string) (PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return PrivateKey{}, err
	}
	defer clear(data)
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return PrivateKey{}, fmt.Errorf("%s: no PEM PRIVATE KEY block (make one with openssl genpkey -algorithm ed25519)", path)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return PrivateKey{}, fmt.Errorf("%s: %w", path, err)
	}
	ed, ok := key.(ed25519.PrivateKey)
	if !ok {
		return PrivateKey{}, fmt.Errorf("%s: a %T, not an ed25519 key", path, key)
	}
	return PrivateKey{key: ed}, nil
}

// LoadPublicKeys reads the scheduler's ed25519 public keys: PEM "PUBLIC KEY"
// blocks (PKIX), as `openssl pkey -pubout` writes them, one or more.
func LoadPublicKeys(path string) (PublicKeys, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys PublicKeys
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("%s: a PEM %s block, want PUBLIC KEY", path, block.Type)
		}
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ed, ok := key.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("%s: a %T, not an ed25519 key", path, key)
		}
		keys = append(keys, ed)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no PEM PUBLIC KEY block (openssl pkey -in KEY -pubout writes one)", path)
	}
	return keys, nil
}

// LoadSecret reads a shared secret of at least 16 bytes (surrounding white space
// is not part of it).
func LoadSecret(path string) (SharedSecret, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	secret := bytes.TrimSpace(data)
	if len(secret) < 16 {
		return nil, fmt.Errorf("%s: the secret must be at least 16 bytes", path)
	}
	return SharedSecret(secret), nil
}
