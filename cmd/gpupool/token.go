package main

import (
	"io"
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

// tokensFile is the flag naming the tokens file, and the clock of expiry.
type tokensFile struct {
	TokensFile string `name:"tokens-file" help:"Tokens file (default auth.tokens_file, <data_dir>/auth/tokens)." env:"GPUPOOL_TOKENS_FILE"`

	now func() time.Time // time.Now unless a test sets it
}

// path is --tokens-file, else the configuration's.
func (f tokensFile) path(g *Globals) (string, error) {
	privateFiles()
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

func (f tokensFile) clock() time.Time {
	if f.now != nil {
		return f.now()
	}
	return time.Now()
}

// TokenCreateCmd makes a token.
type TokenCreateCmd struct {
	tokensFile
	Name    string   `arg:"" help:"Who holds the token (unique in the file): letters, digits, '.', '_', '@', '-'."`
	Role    []string `required:"" short:"r" help:"Roles (repeat or separate with commas): admin, operator, finance, analyzer, agent, team:<name>."`
	Expires string   `help:"When the token stops working: a duration from now (720h, 90d) or a time (2026-12-31, 2026-12-31T18:00:00Z); default never."`

	out, log io.Writer // stdout and stderr unless a test sets them
}

// Run adds the token's line and prints the token.
func (t *TokenCreateCmd) Run(g *Globals) error {
	path, err := t.path(g)
	if err != nil {
		return err
	}
	return auth.CreateTokenTo(stdout(t.out), stderr(t.log), path, t.Name, t.Role, t.Expires, t.clock())
}

// TokenListCmd lists the tokens.
type TokenListCmd struct {
	tokensFile
	Format string `short:"f" help:"Output: table or json." enum:"table,json" default:"table"`

	out io.Writer // stdout unless a test sets it
}

// Run prints the tokens.
func (t *TokenListCmd) Run(g *Globals) error {
	path, err := t.path(g)
	if err != nil {
		return err
	}
	return auth.ListTokensTo(stdout(t.out), path, t.clock(), t.Format == "json")
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
	return auth.RevokeTokenTo(stdout(t.out), path, t.Name)
}
