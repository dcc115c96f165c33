package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpupool/gpupool/auth"
)

// TokenCmd groups the commands that manage the API's static tokens in the tokens
// file (auth.tokens_file). Whoever may write that file runs them (its owner: the
// local administrator); a running scheduler picks each change up within a
// second.
type TokenCmd struct {
	Create TokenCreateCmd `cmd:"" help:"Make a token: its hashed line goes into the tokens file, the token is printed once on standard output."`
	List   TokenListCmd   `cmd:"" aliases:"ls" help:"List the tokens: names, roles and expiry (never the tokens or their hashes)."`
	Revoke TokenRevokeCmd `cmd:"" help:"Remove a token's line: a running scheduler refuses it (401) within a second."`
}

// tokensFile is the flag naming the tokens file.
type tokensFile struct {
	TokensFile string `name:"tokens-file" help:"Tokens file (default auth.tokens_file, <data_dir>/auth/tokens)." env:"GPUPOOL_TOKENS_FILE"`
}

// path is --tokens-file, else the configuration's.
func (f tokensFile) path(g *Globals) (string, error) {
	if f.TokensFile != "" {
		return f.TokensFile, nil
	}
	c, err := g.loadConfig()
	if err != nil {
		return "", err
	}
	c.Resolve()
	return c.Auth.TokensFile, nil
}

// TokenCreateCmd makes a token.
type TokenCreateCmd struct {
	tokensFile
	Name    string   `arg:"" help:"Who holds the token (unique in the file): letters, digits, '.', '_', '@', '-'."`
	Role    []string `required:"" short:"r" help:"Roles (repeat or separate with commas): admin, operator, finance, analyzer, agent, team:<name>."`
	Expires string   `help:"When the token stops working: a duration from now (720h, 90d) or a time (2026-12-31, 2026-12-31T18:00:00Z); default never."`

	out, log io.Writer        // stdout and stderr unless a test sets them
	now      func() time.Time // time.Now unless a test sets it
}

// Run adds the token's line and prints the token.
func (t *TokenCreateCmd) Run(g *Globals) error {
	path, err := t.path(g)
	if err != nil {
		return err
	}
	now := time.Now
	if t.now != nil {
		now = t.now
	}
	expires, err := parseExpiry(t.Expires, now())
	if err != nil {
		return err
	}
	privateFiles()
	tok, e, err := auth.CreateToken(path, t.Name, t.Role, expires, now())
	if err != nil {
		return fmt.Errorf("token create: %w", err)
	}
	// The token alone on standard output (tok=$(gpupool token create …)); what
	// was done on standard error.
	if _, err := fmt.Fprintln(stdout(t.out), tok); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stderr(t.log), "token %s (%s, expires %s) added to %s: it is shown only this once; a running scheduler accepts it within a second\n",
		e.Name, e.RoleList(), expiryText(e, now()), path)
	return err
}

// parseExpiry reads --expires: "" (never), a duration from now (Go's, or whole
// days: 90d), a date (midnight UTC) or an RFC 3339 time.
func parseExpiry(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n > 0 {
			return now.Add(time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(d), nil
	}
	for _, layout := range []string{time.RFC3339, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--expires %q: want a positive duration from now (720h, 90d), a date (2026-12-31, midnight UTC) or an RFC 3339 time (2026-12-31T18:00:00Z)", s)
}

// expiryText is an entry's expiry as list prints it.
func expiryText(e auth.TokenEntry, now time.Time) string {
	switch {
	case e.Expires.IsZero():
		return "never"
	case e.Expired(now):
		return e.Expires.Format(time.RFC3339) + " (expired)"
	}
	return e.Expires.Format(time.RFC3339)
}

// TokenListCmd lists the tokens.
type TokenListCmd struct {
	tokensFile
	Format string `short:"f" help:"Output: table or json." enum:"table,json" default:"table"`

	out io.Writer        // stdout unless a test sets it
	now func() time.Time // time.Now unless a test sets it
}

// tokenRow is one token as list prints it.
type tokenRow struct {
	Name    string     `json:"name"`
	Roles   []string   `json:"roles"`
	Expires *time.Time `json:"expires,omitempty"`
	Expired bool       `json:"expired"`
}

// Run prints the tokens.
func (t *TokenListCmd) Run(g *Globals) error {
	path, err := t.path(g)
	if err != nil {
		return err
	}
	es, err := auth.ListTokens(path)
	if err != nil {
		return fmt.Errorf("token list: %w", err)
	}
	now := time.Now()
	if t.now != nil {
		now = t.now()
	}
	w := stdout(t.out)
	if t.Format == "json" {
		rows := make([]tokenRow, len(es))
		for i, e := range es {
			rows[i] = tokenRow{Name: e.Name, Roles: strings.Split(e.RoleList(), ","), Expired: e.Expired(now)}
			if !e.Expires.IsZero() {
				rows[i].Expires = &es[i].Expires
			}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLES\tEXPIRES")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, e.RoleList(), expiryText(e, now))
	}
	return tw.Flush()
}

// TokenRevokeCmd removes a token.
type TokenRevokeCmd struct {
	tokensFile
	Name string `arg:"" help:"Name of the token to revoke (see gpupool token list)."`

	out io.Writer // stdout unless a test sets it
}

// Run removes the token's line.
func (t *TokenRevokeCmd) Run(g *Globals) error {
	path, err := t.path(g)
	if err != nil {
		return err
	}
	privateFiles()
	if err := auth.RevokeToken(path, t.Name); err != nil {
		return fmt.Errorf("token revoke: %w", err)
	}
	_, err = fmt.Fprintf(stdout(t.out), "revoked token %s in %s: a running scheduler refuses it within a second\n", t.Name, path)
	return err
}
