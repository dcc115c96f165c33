package main

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
)

// testClock is a clock a test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// runToken parses args as the gpupool command line (a token subcommand), runs it
// with now as its clock and returns what it wrote to stdout and stderr.
func runToken(t *testing.T, now func() time.Time, args ...string) (string, string, error) {
	t.Helper()
	var cli CLI
	var usage bytes.Buffer
	kctx, err := newParser(&cli, kong.Writers(&usage, &usage), kong.Exit(func(int) { t.Fatal("the parser exited") })).Parse(args)
	if err != nil {
		return "", "", err
	}
	var out, log bytes.Buffer
	cli.Token.Create.out, cli.Token.Create.log, cli.Token.Create.now = &out, &log, now
	cli.Token.List.out, cli.Token.List.now = &out, now
	cli.Token.Revoke.out, cli.Token.Revoke.now = &out, now
	err = kctx.Run(&cli.Globals)
	return out.String(), log.String(), err
}

// TestTokenCommands: gpupool token create writes a line that a running
// scheduler's guard accepts from its next reload (the token printed once, alone
// on stdout); list shows names, roles and expiry and never a token or hash
// (golden); an --expires token is refused (401) once past; revoke makes the token
// 401 from the next reload.
func TestTokenCommands(t *testing.T) {
	clk := &testClock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	dataDir := t.TempDir()
	tokens := filepath.Join(dataDir, "auth", "tokens")
	svc, err := scheduler.New(scheduler.DefaultConfig(), scheduler.WithClock(clk.now), scheduler.WithJobIDPrefix(""))
	if err != nil {
		t.Fatal(err)
	}
	cfg := auth.DefaultConfig()
	cfg.TokensFile = tokens
	guard, err := auth.New(t.Context(), cfg, auth.WithClock(clk.now)) // no file yet: no token
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewHandler(svc, guard))
	t.Cleanup(srv.Close)
	g := &Globals{DataDir: t.TempDir()}
	queues := func(tok string) error {
		return (&QueueLsCmd{schedulerClient{SchedulerURL: srv.URL, Format: "json", Token: tok, out: &bytes.Buffer{}}}).Run(g, t.Context())
	}

	out, log, err := runToken(t, clk.now, "--data-dir", dataDir, "token", "create", "vision-ci", "--role", "team:vision", "-r", "finance")
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(out)
	if !strings.HasPrefix(tok, auth.TokenPrefix) || strings.Count(out, "\n") != 1 {
		t.Fatalf("stdout %q: want the token alone", out)
	}
	if strings.Contains(log, tok) || !strings.Contains(log, "shown only this once") {
		t.Errorf("stderr %q", log)
	}
	if data, _ := os.ReadFile(tokens); bytes.Contains(data, []byte(tok)) {
		t.Fatal("the tokens file holds the token itself")
	}
	if err := queues(tok); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("before the guard's reload: %v", err) // the reload interval has not passed
	}
	clk.add(time.Second)
	if err := queues(tok); err != nil {
		t.Fatalf("created token after a reload: %v", err)
	}
	if _, _, err := runToken(t, clk.now, "--data-dir", dataDir, "token", "create", "contractor", "--role", "team:nlp", "--expires", "2h"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runToken(t, clk.now, "--data-dir", dataDir, "token", "create", "ops", "--role", "operator", "--expires", "2027-01-01"); err != nil {
		t.Fatal(err)
	}
	clk.add(3 * time.Hour) // the contractor's token has expired
	out, _, err = runToken(t, clk.now, "--data-dir", dataDir, "token", "list")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/token_list.golden", out)
	if strings.Contains(out, "sha256") || strings.Contains(out, auth.TokenPrefix) {
		t.Errorf("list shows a hash or a token:\n%s", out)
	}

	if _, _, err := runToken(t, clk.now, "--data-dir", dataDir, "token", "revoke", "vision-ci"); err != nil {
		t.Fatal(err)
	}
	clk.add(time.Second)
	if err := queues(tok); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("revoked token: %v, want 401", err)
	}
}

// TestTokenCommandsRefuse: a bad role, name or expiry is refused naming what is
// valid, and a tokens file others may read is left alone.
func TestTokenCommandsRefuse(t *testing.T) {
	dataDir := t.TempDir()
	now := func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown role", []string{"token", "create", "bob", "--role", "root"}, `role "root" is not admin, operator, finance, analyzer, agent or team:<name>`},
		{"no role", []string{"token", "create", "bob"}, "missing flags: --role"},
		{"bad name", []string{"token", "create", "bob/x", "-r", "admin"}, `token name "bob/x"`},
		{"bad expiry", []string{"token", "create", "bob", "-r", "admin", "--expires", "soon"}, "want a positive duration from now (720h, 90d), a date"},
		{"past expiry", []string{"token", "create", "bob", "-r", "admin", "--expires", "2020-01-01"}, "is not after now"},
		{"revoke unknown", []string{"token", "revoke", "bob"}, "no token of that name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runToken(t, now, append([]string{"--data-dir", dataDir}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
	tokens := filepath.Join(dataDir, "auth", "tokens")
	if _, err := os.Stat(tokens); err == nil {
		t.Fatal("refused commands made a tokens file")
	}
	if _, _, err := runToken(t, now, "--data-dir", dataDir, "token", "create", "ops", "-r", "operator"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tokens, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := runToken(t, now, "--data-dir", dataDir, "token", "create", "bob", "-r", "admin")
	if !errors.Is(err, auth.ErrTokensFileExposed) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("create in a world-readable tokens file: %v", err)
	}
}

// golden compares got with the file at path (rewritten with -update).
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (rerun with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update if intended):\n--- got\n%s--- want\n%s", path, got, want)
	}
}
