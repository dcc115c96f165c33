package auth

import (
	"fmt"
	"io"
	"time"
)

// CreateTokenTo is gpupool token create: it adds a token for name with roles,
// expiring at expires (ParseExpiry's text, relative to now), to the tokens file
// at path, prints the token alone on out (tok=$(gpupool token create …)) and
// what was done on log.
func CreateTokenTo(out, log io.Writer, path, name string, roles []string, expires string, now time.Time) error {
	exp, err := ParseExpiry(expires, now)
	if err != nil {
		return fmt.Errorf("--expires: %w", err)
	}
	tok, e, err := CreateToken(path, name, roles, exp, now)
	if err != nil {
		return fmt.Errorf("token create: %w", err)
	}
	if _, err := fmt.Fprintln(out, tok); err != nil {
		return err
	}
	_, err = fmt.Fprintf(log, "token %s (%s, expires %s) added to %s: it is shown only this once; a running scheduler accepts it within a second\n",
		e.Name, e.RoleList(), e.ExpiryText(now), path)
	return err
}

// ListTokensTo is gpupool token list: the tokens of the file at path, as a table
// or JSON, on out.
func ListTokensTo(out io.Writer, path string, now time.Time, json bool) error {
	es, err := ListTokens(path)
	if err != nil {
		return fmt.Errorf("token list: %w", err)
	}
	return WriteTokens(out, es, now, json)
}

// RevokeTokenTo is gpupool token revoke: it removes name's line from the file at
// path and says so on out.
func RevokeTokenTo(out io.Writer, path, name string) error {
	if err := RevokeToken(path, name); err != nil {
		return fmt.Errorf("token revoke: %w", err)
	}
	_, err := fmt.Fprintf(out, "revoked token %s in %s: a running scheduler refuses it within a second\n", name, path)
	return err
}
