package traceanalysis

import (
	"time"

	"github.com/gpupool/gpupool/analyzer/chargeback"
	"github.com/gpupool/gpupool/analyzer/pricebook"
	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/schemas/trace"
)

// Report is what an analysis found: the JSON output of `gpupool analyze`. The
// field names, and those of findings' and chargeback rows' fields, are a public
// contract (schemas.Finding, chargeback.Row). Its slices are never nil, so they
// encode as [] when empty.
type Report struct {
	Trace         Span                `json:"trace"`
	Findings      []schemas.Finding   `json:"findings"`
	Chargeback    []chargeback.Row    `json:"chargeback"`
	PriceProblems []pricebook.Problem `json:"price_problems"`
	// JobsWithoutTeam are the jobs left out of the chargeback because no event of
	// theirs names a team (SkipBadLines).
	JobsWithoutTeam []string `json:"jobs_without_team,omitempty"`
	// LineErrors are the lines skipped (Config.SkipBadLines), for the user's
	// attention; not part of the JSON.
	LineErrors []trace.LineError `json:"-"`
}

// Span describes what was read and analysed.
type Span struct {
	File         string    `json:"file"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	GPURows      uint64    `json:"gpu_rows"`
	ProcessRows  uint64    `json:"process_rows"`
	JobEvents    uint64    `json:"job_events"`
	SkippedLines int       `json:"skipped_lines"`
	// DuplicateRecords repeated a record of the same time and were played once.
	DuplicateRecords uint64 `json:"duplicate_records"`
	// ReorderedLines came after a line of a later time and were put in place
	// (within Config.ReorderWindow).
	ReorderedLines int `json:"reordered_lines"`
	// LateLines, FutureLines and InvalidLines were dropped (SkipBadLines; they are
	// among SkippedLines): late beyond the reorder window, after the trace's clock
	// beyond the future skew, breaking a bound relating them to other lines.
	LateLines    int `json:"late_lines"`
	FutureLines  int `json:"future_lines"`
	InvalidLines int `json:"invalid_lines"`
	// NoTeamJobs is how many jobs no event of which names a team: refused, or
	// left out of the chargeback with SkipBadLines (never billed to team "");
	// Report.JobsWithoutTeam names them.
	NoTeamJobs int `json:"no_team_jobs"`
	Passes     int `json:"passes"`
	// IntervalSeconds is the trace time between passes.
	IntervalSeconds float64 `json:"interval_seconds"`
}

// Progress is how far an analysis has got.
type Progress struct {
	// BytesRead is how much of the trace has been read, as stored (compressed
	// when gzip).
	BytesRead int64
	// At is the trace time reached.
	At time.Time
	// Rows is the GPU rows, process rows and job events read.
	Rows uint64
	// Passes is the analyzer passes run.
	Passes int
	// Done is set on the last update: the trace is read and every pass run.
	Done bool
}
