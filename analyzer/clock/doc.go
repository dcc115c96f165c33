// Package clock runs analyzer passes on the data's clock rather than the wall
// clock: `gpupool analyze` on a trace's time, the demo on its simulated time.
//
// In: the data's clock, told by the caller through Advance (everything before
// the time given is in, or on its way), the pass interval, and two functions: the
// pass itself and a Barrier that holds a pass back until the data it reads is in
// the store (the trace: the loader's flush; the demo: ingest catching up with
// what the fleet had published). Passes fall due at start+interval,
// start+2·interval, … and, at Finish, once at the end. With Config.GapLimit set,
// a stretch with no data longer than the limit gets passes only up to the limit
// after its last record, and passes resume at the one due just before the data
// does.
//
// A Runner runs the passes inline, in Advance (the trace), or after Start in its
// own goroutine, skipping to the latest pass due when it falls behind (the demo:
// a pass costs about a second while a simulated day takes a minute). A pass that
// fails is logged and counted and the run goes on.
//
// Out: the passes' side effects, and Stats: passes run, skipped and failed, the
// last pass time and the wall time they took.
package clock
