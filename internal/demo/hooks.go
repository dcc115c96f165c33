package demo

import (
	"context"
	"time"
)

// Components the demo runs, as Hooks.Label names them.
const (
	CompNATS       = "nats"       // the embedded NATS server and the bus connection
	CompStore      = "store"      // opening and migrating the store
	CompIngest     = "ingest"     // ingest's consumers and inserts
	CompCollectors = "collectors" // the simulated fleet and its collectors' publishing
	CompAnalyzer   = "analyzer"   // the analyzer's passes
	CompScheduler  = "scheduler"  // admission after ticks and the policies' passes
	CompConsole    = "console"    // the web console's server and handlers
)

// Hooks let a caller that measures the demo (bench's pipeline benchmark) see
// inside one run. Every field may be nil.
type Hooks struct {
	// Label runs f as component's work (one of the Comp names) and must call f
	// once, with ctx or a context derived from it; goroutines f starts inherit
	// what Label sets (runtime/pprof labels, so a CPU profile's samples carry
	// the component). Default: f(ctx).
	Label func(ctx context.Context, component string, f func(context.Context))
	// Started is called once the components are up, before the fleet runs;
	// from then Counts and SimNow may be called from any goroutine.
	Started func(d *Demo)
	// Simulated is called when the fleet has run to its end, ingest has caught
	// up and the last analyzer pass has run, before the summary.
	Simulated func()
	// Done is called after the summary, while the console (WithConsole) still
	// serves; Run returns when its ctx ends.
	Done func()
}

// WithHooks sets the hooks (default: none).
func WithHooks(h Hooks) Option { return func(d *Demo) { d.hooks = h } }

// label runs f as component's work (Hooks.Label).
func (d *Demo) label(ctx context.Context, component string, f func(context.Context)) {
	if d.hooks.Label == nil {
		f(ctx)
		return
	}
	d.hooks.Label(ctx, component, f)
}

// Counts is the rows the fleet has published (acknowledged by the bus) and the
// rows ingest has stored, so far; valid from Hooks.Started on.
func (d *Demo) Counts() (published, stored uint64) { return d.published(), d.stored() }

// SimNow is the fleet's simulated time; valid from Hooks.Started on.
func (d *Demo) SimNow() time.Time { return d.driver.Now() }

// Console is the console's URL and the admin token to read it with (empty
// without WithConsole); valid from Hooks.Started on.
func (d *Demo) Console() (url, token string) { return d.consoleURL, d.consoleToken }

// hook calls h when it is set.
func hook(h func()) {
	if h != nil {
		h()
	}
}
