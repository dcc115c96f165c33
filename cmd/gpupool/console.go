package main

import (
	"cmp"
	"context"
	"fmt"
	"io"

	consoled "github.com/gpupool/gpupool/console/daemon"
	"github.com/gpupool/gpupool/scheduler/api"
)

// ConsoleCmd serves the web console over an existing store (and scheduler).
type ConsoleCmd struct {
	Listen       string `help:"Address to serve the console on (default console.listen, 127.0.0.1:9480; a non-loopback one needs auth.tls or auth.insecure)."`
	SchedulerURL string `name:"scheduler-url" env:"GPUPOOL_SCHEDULER_URL" help:"URL of the scheduler's API, for the Pools page's quotas and use (default: none)."`
	TokenFile    string `name:"token-file" env:"GPUPOOL_TOKEN_FILE" help:"Token the console reads the scheduler's API with (default: GPUPOOL_TOKEN, else <data_dir>/auth/admin.token)."`
	Token        string `hidden:"" env:"GPUPOOL_TOKEN" help:"The scheduler API token (set GPUPOOL_TOKEN: a flag's value shows in ps)."`
	CAFile       string `name:"ca-file" env:"GPUPOOL_CA_FILE" help:"CA certificate to trust for an https:// scheduler URL."`
	Insecure     bool   `name:"scheduler-insecure" help:"Send the token over plain http:// to a scheduler not on this machine (a TLS-terminating proxy on the way). The data directory's admin token never leaves this machine."`

	out io.Writer // stdout unless a test sets it
}

// Run serves the console until interrupted; users log in with their API token.
func (k *ConsoleCmd) Run(g *Globals, ctx context.Context) error {
	c, log, err := g.setup(nil)
	if err != nil {
		return err
	}
	cc := c.Console
	cc.Listen = cmp.Or(k.Listen, cc.Listen)
	d := consoled.Deployment{Console: cc, Store: c.Store, Auth: c.Auth, SchedulerURL: k.SchedulerURL,
		Scheduler: api.Credentials{TokenFile: k.TokenFile, Token: k.Token, DefaultTokenFile: c.Auth.AdminTokenFile, CAFile: k.CAFile, Insecure: k.Insecure},
		Policies:  c.Scheduler.Policies}
	return consoled.Serve(ctx, d, log, func(url string) {
		fmt.Fprintf(stdout(k.out), "gpupool console: %s (log in with an API token from %s)\n", url, c.Auth.TokensFile)
	})
}
