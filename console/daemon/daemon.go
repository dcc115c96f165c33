// Package daemon runs the web console as a process (`gpupool console`): it
// opens the store read-only, builds the guard and the scheduler client, and
// serves the console, as the collector's and the scheduler's daemons run
// theirs. Only composition roots and daemons choose a store backend.
//
// In: a Deployment (the console:, store: and auth: sections, the scheduler's
// URL and credentials). Out: the console on its listen address until the
// context ends.
package daemon

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/console"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/api"
	"github.com/gpupool/gpupool/store/backend"
)

// Deployment is what `gpupool console` serves from: an existing store, the
// auth: section (the tokens the scheduler's API accepts), and optionally the
// scheduler's API.
type Deployment struct {
	Console console.Config
	Store   backend.Config
	Auth    auth.Config
	// SchedulerURL is the scheduler's API ("": none; the Pools page then shows
	// the store's queue waits only). Scheduler are the credentials the console
	// reads it with (any reader role; queues and the model are whole for every
	// reader).
	SchedulerURL string
	Scheduler    api.Credentials
	// Policies are the scheduler's (scheduler.policies), for the findings pages'
	// next step.
	Policies []scheduler.Policy
}

// Serve opens the store read-only, builds the guard and the scheduler client,
// and serves the console until ctx ends; ready, when set, is called with the
// console's URL once it listens.
func Serve(ctx context.Context, d Deployment, log *slog.Logger, ready func(url string)) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	warnings, err := d.Auth.CheckListen(d.Console.Listen)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	for _, w := range warnings {
		log.Warn("console is not protected", "why", w)
	}
	g, err := auth.New(ctx, d.Auth, auth.WithLogger(log))
	if err != nil {
		return err
	}
	tc, err := auth.ServerTLS(d.Auth.TLS)
	if err != nil {
		return err
	}
	d.Console.SecureCookie = d.Console.SecureCookie || tc != nil
	st, err := backend.OpenExisting(ctx, d.Store, log, true)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := []console.Option{console.WithLogger(log), console.WithPolicies(d.Policies)}
	if d.SchedulerURL != "" {
		sc, err := api.Dial(d.SchedulerURL, d.Scheduler)
		if err != nil {
			return fmt.Errorf("console: scheduler API %s: %w", d.SchedulerURL, err)
		}
		opts = append(opts, console.WithScheduler(sc), console.WithActor(func(tok string) console.JobActor { return sc.As(tok) }))
	}
	c, err := console.New(d.Console, st, g, opts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", d.Console.Listen)
	if err != nil {
		return fmt.Errorf("console: listen %s: %w", d.Console.Listen, err)
	}
	scheme := "http"
	if tc != nil {
		ln, scheme = tls.NewListener(ln, tc), "https"
	}
	if ready != nil {
		ready(scheme + "://" + ln.Addr().String())
	}
	return c.Serve(ctx, ln)
}
