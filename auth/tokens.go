package auth

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// TokenPrefix starts every token NewToken makes (so that a leaked one is easy to
// find in logs and repositories).
const TokenPrefix = "gpupool_"

// hashPrefix starts a token's hash in the tokens file.
const hashPrefix = "sha256:"

// reloadInterval is how often TokenFile looks at its file.
const reloadInterval = time.Second

var (
	nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$`)
	hashRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// NewToken returns a new random token: TokenPrefix and 32 random bytes,
// base64url.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: new token: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashToken is how the tokens file stores a token: "sha256:" and the hex SHA-256
// of the token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hashPrefix + hex.EncodeToString(sum[:])
}

// TokenEntry is one line of the tokens file.
type TokenEntry struct {
	// Name is who holds the token (unique in the file).
	Name  string
	Roles []Role
	// Hash is HashToken of the token.
	Hash string
	// Expires is when the token stops being accepted (zero: never); UTC, to
	// the second.
	Expires time.Time
}

// expiresKey starts the optional fourth field of a tokens line.
const expiresKey = "expires="

// String is the entry as a line of the tokens file.
func (e TokenEntry) String() string {
	line := e.Name + " " + e.RoleList() + " " + e.Hash
	if !e.Expires.IsZero() {
		line += " " + expiresKey + e.Expires.UTC().Format(time.RFC3339)
	}
	return line
}

// RoleList is the roles, comma-separated, as the tokens file writes them.
func (e TokenEntry) RoleList() string {
	roles := make([]string, len(e.Roles))
	for i, r := range e.Roles {
		roles[i] = string(r)
	}
	return strings.Join(roles, ",")
}

// Expired reports whether the token is past its expiry at now.
func (e TokenEntry) Expired(now time.Time) bool {
	return !e.Expires.IsZero() && !now.Before(e.Expires)
}

// ParseTokens reads a tokens file: one token a line, "<name> <role>[,<role>…]
// sha256:<hex> [expires=<RFC 3339 time>]", fields separated by blanks; blank
// lines and lines starting with # are skipped. Names and hashes are unique; a
// line without expires= never expires (files written before it existed read as
// they did). Errors name the line.
func ParseTokens(data []byte) ([]TokenEntry, error) {
	var out []TokenEntry
	names, hashes := map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseTokenLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if prev, ok := names[e.Name]; ok {
			return nil, fmt.Errorf("line %d: name %q is already on line %d", n, e.Name, prev)
		}
		if prev, ok := hashes[e.Hash]; ok {
			return nil, fmt.Errorf("line %d: the same token as line %d", n, prev)
		}
		names[e.Name], hashes[e.Hash] = n, n
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func parseTokenLine(line string) (TokenEntry, error) {
	f := strings.Fields(line)
	if len(f) != 3 && len(f) != 4 {
		return TokenEntry{}, fmt.Errorf("%d fields, want 3 or 4: <name> <role>[,<role>…] sha256:<hex> [expires=<RFC 3339 time>]", len(f))
	}
	if !nameRe.MatchString(f[0]) {
		return TokenEntry{}, fmt.Errorf("name %q: letters, digits, '.', '_', '@' or '-'", f[0])
	}
	roles, err := ParseRoles(strings.Split(f[1], ","))
	if err != nil {
		return TokenEntry{}, err
	}
	if !hashRe.MatchString(f[2]) {
		return TokenEntry{}, errors.New("hash: want sha256: and 64 lower-case hex digits (the SHA-256 of the token)")
	}
	e := TokenEntry{Name: f[0], Roles: roles, Hash: f[2]}
	if len(f) == 4 {
		v, ok := strings.CutPrefix(f[3], expiresKey)
		if !ok {
			return TokenEntry{}, fmt.Errorf("fourth field %q: want expires=<RFC 3339 time>, e.g. expires=2026-12-31T00:00:00Z", f[3])
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return TokenEntry{}, fmt.Errorf("expires=%s: want an RFC 3339 time, e.g. 2026-12-31T00:00:00Z", v)
		}
		e.Expires = t.UTC().Truncate(time.Second)
	}
	return e, nil
}

// TokenFile authenticates static bearer tokens against a tokens file, re-reading
// it (at most once a second) when its content changes: tokens are added, rotated
// and revoked by editing the file, without a restart. A token past its expires=
// is refused (by the clock of WithClock). A file that no longer
// parses keeps the tokens read before (logged and counted). A missing file holds
// no token. It is safe for concurrent use.
type TokenFile struct {
	path string
	o    options

	mu      sync.Mutex
	checked time.Time
	sum     [32]byte
	byHash  map[string]TokenEntry
}

var _ Authenticator = (*TokenFile)(nil)

// NewTokenFile reads the tokens file at path; one that does not parse is an error.
func NewTokenFile(path string, opts ...Option) (*TokenFile, error) {
	t := &TokenFile{path: path, o: newOptions(opts)}
	data, err := readTokens(path)
	if err != nil {
		return nil, err
	}
	if err := t.load(data); err != nil {
		return nil, fmt.Errorf("auth: tokens file %s: %w", path, err)
	}
	t.checked = t.o.now()
	return t, nil
}

// readTokens reads the file; a missing one is empty.
func readTokens(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: tokens file: %w", err)
	}
	return data, nil
}

// load replaces the tokens with data's; call with t.mu held (or before t is shared).
func (t *TokenFile) load(data []byte) error {
	entries, err := ParseTokens(data)
	if err != nil {
		return err
	}
	t.byHash = make(map[string]TokenEntry, len(entries))
	for _, e := range entries {
		t.byHash[e.Hash] = e
	}
	t.sum = sha256.Sum256(data)
	t.o.metrics.setTokens(len(entries))
	return nil
}

// refresh re-reads the file if a second has passed since the last look and its
// content changed; call with t.mu held.
func (t *TokenFile) refresh() {
	now := t.o.now()
	if now.Sub(t.checked) < reloadInterval {
		return
	}
	t.checked = now
	data, err := readTokens(t.path)
	if err == nil && sha256.Sum256(data) == t.sum {
		return
	}
	if err == nil {
		err = t.load(data)
	}
	if err != nil {
		t.o.metrics.reload(false)
		t.o.log.Warn("tokens file not reloaded; the tokens read before still hold", "path", t.path, "err", err)
		return
	}
	t.o.metrics.reload(true)
	t.o.log.Info("tokens file reloaded", "path", t.path, "tokens", len(t.byHash))
}

// Authenticate finds the request's bearer token in the file.
func (t *TokenFile) Authenticate(r *http.Request) (Identity, error) {
	tok, err := bearerToken(r)
	if err != nil {
		return Identity{}, err
	}
	h := HashToken(tok)
	t.mu.Lock()
	t.refresh()
	e, ok := t.byHash[h]
	now := t.o.now()
	t.mu.Unlock()
	if !ok {
		return Identity{}, fmt.Errorf("%w: unknown token (not in the tokens file, or revoked)", ErrInvalidCredential)
	}
	if e.Expired(now) {
		return Identity{}, fmt.Errorf("%w: token expired at %s (gpupool token create makes a new one)", ErrInvalidCredential, e.Expires.Format(time.RFC3339))
	}
	return Identity{Name: e.Name, Method: "token", Roles: slices.Clone(e.Roles)}, nil
}

// BearerToken is the token of the request's "Authorization: Bearer" header
// (ErrNoCredential without one): what a service acting for the caller passes on.
func BearerToken(r *http.Request) (string, error) { return bearerToken(r) }

// bearerToken is the token of the request's "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", ErrNoCredential
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("%w: Authorization header: want \"Bearer <token>\"", ErrInvalidCredential)
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", fmt.Errorf("%w: empty bearer token", ErrInvalidCredential)
	}
	return tok, nil
}

// isJWT reports whether a bearer token has a JWT's shape: three base64url parts.
func isJWT(tok string) bool { return strings.Count(tok, ".") == 2 }
