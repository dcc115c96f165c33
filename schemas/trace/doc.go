// Package trace reads and writes gpupool traces: the public, line-oriented record of
// what collectors saw and what schedulers did (TRACE_FORMAT.md, v1).
//
// In: JSON Lines, one object per line, optionally gzip-compressed (detected by its
// magic bytes, not by a file name). Each line is a `gpu`, `process` or `job` record.
// Out: Records holding a *schemas.GPUSample, *schemas.ProcessSample or
// *schemas.JobEvent, in file order.
//
// Units are those of the format and of package schemas: times are RFC 3339 in the
// file and milliseconds since the Unix epoch (UTC) in memory (sub-millisecond digits
// are dropped); ratios are 0..1; memory is MiB (a fractional value is rounded to the
// nearest MiB); power is watts; energy is millijoules.
//
// Reading is lenient where the format says so and strict everywhere else: unknown
// fields are ignored, a missing optional ratio or float is schemas.Missing (NaN), a
// missing cluster is "default", and a gpu row's Card is derived with
// schemas.CardType (for a MIG instance, from the memory size in the parent card's
// model name). A line that is not valid JSON, has an unknown type, misses a required
// field, holds a value of the wrong type or outside its range, or names an unknown
// enumeration value is a *LineError carrying the line number and the reason. A
// strict Reader stops at the first; a lenient one counts it, keeps the first few for
// a report and goes on.
//
// A Writer produces lines in the same format (field names exactly as TRACE_FORMAT.md,
// NaN fields omitted) that a Reader reads back to the same records. Fields that the
// format does not carry are not written: GPUSample.Card (derived again on reading),
// GPUSample.ClockEventReasons, JobEvent.Source and JobEvent.Labels. An empty
// cluster is not written, so it reads back as "default".
//
// The JSON is parsed by a hand-written scanner rather than encoding/json: traces of a
// fleet run to hundreds of millions of lines, and the scanner reads them several
// times faster. Its tests check it against encoding/json.
package trace
