// Package replay plays a recorded trace back through the pipeline and records what
// collectors see into a trace.
//
// In (Player): a trace.Reader over a trace file (TRACE_FORMAT.md). Out: Ticks, one
// per distinct timestamp in the trace, in time order. A Tick holds the sample rows of
// that timestamp as one *schemas.SampleBatch per (cluster, node) — what each node's
// collector would have published at that moment — and the job events of that
// timestamp. Lines need only be in time order per node: the Player holds records
// for Config.Window of trace time so that nodes may interleave (the window runs from
// the latest time read, job events included). A record that comes later than that
// is still played, at once, in a Tick of its own stamped with the time of the last
// Tick played, so Tick times never go backwards; it is counted as late.
//
// Speed 0 plays as fast as the caller takes Ticks; Speed 1 spaces them as their
// timestamps are spaced (real time), Speed 10 ten times faster. Waiting goes
// through a Clock, which tests replace.
//
// In (Recorder): the batches and job events a collector publishes. Out: trace lines
// through a trace.Writer, safe for several collectors at once.
//
// In (Driver): a Player and a JetStream publisher. Out: each Tick published as
// the pipeline would see it live: every node's batch through its own
// collector.Collector, the job events through a bus.JobPublisher.
//
// Units: Tick.At is the trace time (UTC); sample and event times stay milliseconds
// since the Unix epoch, as in package schemas.
package replay
