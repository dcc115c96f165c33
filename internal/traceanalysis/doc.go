// Package traceanalysis runs a recorded trace through ingest and the analyzer in
// a temporary embedded store, on the trace's own clock: what `gpupool analyze`
// does.
//
// In: a trace (JSON Lines, optionally gzip; schemas/trace), the analyzer's
// configuration (its Interval is the trace time between passes), the embedded
// store's settings and a price book. Run replays the trace through
// collector/replay into ingest.Loader, and runs the analyzer passes due on the
// trace's clock (analyzer/clock, each after the loader's flush; in a gap of the
// trace longer than Config.GapLimit only the passes up to the limit after its last
// record), then reads the findings that opened during the trace, its chargeback
// and the price book's problems. The store lives in a temporary directory removed
// when Run returns; its raw samples are kept ten years, so an old trace is not
// expired as it loads.
//
// Out: a Report, whose JSON form is the output of `gpupool analyze --format json`
// (a public contract: field names do not change), and Progress updates while the
// trace is read. Units as in the analyzer: GPU-hours, money in the price book's
// currency.
package traceanalysis
