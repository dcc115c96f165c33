package billing

import "time"

// Report is the chargeback of one period, with the previous period of the same kind
// for comparison. Its JSON keys are a public contract: keys may be added, none
// renamed or removed. Money is in Currency; a nil money figure means some of its
// GPU-hours had no price (or prices were in more than one currency), never zero.
type Report struct {
	// Period is the period reported; Previous the one before it (the month, ISO
	// week or day before).
	Period   PeriodInfo `json:"period"`
	Previous PeriodInfo `json:"previous_period"`
	// Scope is set when the report is cut to some teams (Scoped): it then holds
	// those teams' figures only, and its totals are theirs. Absent for the
	// fleet's report.
	Scope *ReportScope `json:"scope,omitempty"`
	// Currency is the price book's currency of the period's costs; empty when
	// nothing was priced or currencies mix.
	Currency string `json:"currency"`
	// Totals are the period's figures over every team; PreviousTotals the previous
	// period's; Change compares the two.
	Totals         Totals  `json:"totals"`
	PreviousTotals Figures `json:"previous_totals"`
	Change         Change  `json:"change"`
	// Teams, Projects and Cards break the allocated GPU time down, largest cost
	// (then GPU-hours) first.
	Teams    []Line `json:"teams"`
	Projects []Line `json:"projects"`
	Cards    []Line `json:"cards"`
	// Clusters and Models break it down by cluster and by model the same way.
	Clusters []Line `json:"clusters"`
	Models   []Line `json:"models"`
	// Unallocated is, per card type, the GPU time no job held while the GPUs were
	// reporting.
	Unallocated []Unallocated `json:"unallocated"`
	// Fragmentation is, per cluster and card type, the free GPUs no queued job
	// could use (stranded) over the period, from the scheduler's samples
	// (fragmentation_hourly); empty when the scheduler does not place jobs on
	// nodes or recorded nothing in the period. Fleet-wide: a team's report
	// leaves it out (Scoped).
	Fragmentation []Fragmentation `json:"fragmentation"`
	// TopWaste are the job attempts with the most idle GPU-hours in the period.
	TopWaste []Waste `json:"top_waste"`
	// Findings are the analyzer's finding episodes that overlapped the period,
	// open or resolved since, largest waste in the period first (at most 10).
	Findings []Finding `json:"findings"`
	// QueueWait is per team and pool, over the attempts that started in the period.
	QueueWait []QueueWait `json:"queue_wait"`
	// Failures are the reasons the attempts that ended in the period did not
	// succeed, most frequent first (cancelled included, succeeded left out).
	Failures []Failure `json:"failures"`
	// EndedAttempts counts every attempt that ended in the period.
	EndedAttempts int64 `json:"ended_attempts"`
	// Output is per team and model, over the attempts that ended in the period.
	Output []Output `json:"output"`
	// IdleTrend is the idle cost per day (per hour for a one-day period).
	IdleTrend []TrendPoint `json:"idle_trend"`
	// Utilisation is the mean SM activity per card type and hour of day, in the
	// period's time zone, over all GPU time of those cards.
	Utilisation []UtilCell `json:"utilisation"`
	// Capacity is the capacity page: demand and capacity per cluster and card
	// type over the weeks before the period's end, and their forecast.
	Capacity CapacityPage `json:"capacity"`
}

// PeriodInfo names a period: [From, To) in its time zone.
type PeriodInfo struct {
	Label    string    `json:"label"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	TimeZone string    `json:"timezone"`
}

// Figures are the chargeback figures of a set of job attempts.
type Figures struct {
	Jobs                int64    `json:"jobs"`
	GPUHours            float64  `json:"gpu_hours"`
	UsedGPUHours        float64  `json:"used_gpu_hours"`
	IdleGPUHours        float64  `json:"idle_gpu_hours"`
	UnmeasuredGPUHours  float64  `json:"unmeasured_gpu_hours"`
	UnpricedGPUHours    float64  `json:"unpriced_gpu_hours"`
	Cost                *float64 `json:"cost"`
	IdleCost            *float64 `json:"idle_cost"`
	FailedRerunGPUHours float64  `json:"failed_rerun_gpu_hours"`
	FailedRerunCost     *float64 `json:"failed_rerun_cost"`
	QueueWaitHours      float64  `json:"queue_wait_hours"`
	EnergyKWh           float64  `json:"energy_kwh"`
	Currency            string   `json:"currency"`
	// QueueWaitGPUHours are the GPU-hours the attempts waited for (hours × GPUs
	// asked for); QueueWaitCost is their opportunity cost (docs/finance.md), in
	// Currency, nil when a wait is unpriced.
	QueueWaitGPUHours float64  `json:"queue_wait_gpu_hours"`
	QueueWaitCost     *float64 `json:"queue_wait_cost"`
	// EnergyCost is EnergyKWh at the clusters' prices per kWh, nil when some of
	// it is unpriced.
	EnergyCost *float64 `json:"energy_cost"`
}

// IdleRatio is the idle share of the measured GPU time, 0..1 (0 when nothing was
// measured).
func (f Figures) IdleRatio() float64 {
	if m := f.UsedGPUHours + f.IdleGPUHours; m > 0 {
		return f.IdleGPUHours / m
	}
	return 0
}

// Totals are the figures of every job attempt of a period, and the unallocated
// capacity beside them.
type Totals struct {
	Figures
	UnallocatedGPUHours float64  `json:"unallocated_gpu_hours"`
	UnallocatedCost     *float64 `json:"unallocated_cost"`
}

// Change compares a period with the previous one: (now − before) / before, nil
// when the previous figure is zero or unknown.
type Change struct {
	GPUHours     *float64 `json:"gpu_hours"`
	Cost         *float64 `json:"cost"`
	IdleGPUHours *float64 `json:"idle_gpu_hours"`
	IdleCost     *float64 `json:"idle_cost"`
	EnergyKWh    *float64 `json:"energy_kwh"`
}

// Line is one team, project (with its team) or card type.
type Line struct {
	Team    string `json:"team,omitempty"`
	Project string `json:"project,omitempty"`
	Card    string `json:"card,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	Model   string `json:"model,omitempty"`
	Figures
	// PreviousGPUHours and PreviousCost are the same key's figures in the previous
	// period; CostChange compares the costs like Change.
	PreviousGPUHours float64  `json:"previous_gpu_hours"`
	PreviousCost     *float64 `json:"previous_cost"`
	CostChange       *float64 `json:"cost_change"`
}

// Unallocated is the GPU time of one card type no job held.
type Unallocated struct {
	Card                string   `json:"card"`
	CapacityGPUHours    float64  `json:"capacity_gpu_hours"`
	AllocatedGPUHours   float64  `json:"allocated_gpu_hours"`
	UnallocatedGPUHours float64  `json:"unallocated_gpu_hours"`
	UnallocatedCost     *float64 `json:"unallocated_cost"`
	Currency            string   `json:"currency"`
}

// Fragmentation is one cluster and card type's stranded capacity over the
// period: the fragmentation_hourly view's hours summed.
type Fragmentation struct {
	Cluster string `json:"cluster"`
	Card    string `json:"card"`
	// SampledHours is the time the scheduler's samples stand for (each until
	// the next, at most 15 minutes); the means are over it.
	SampledHours     float64 `json:"sampled_hours"`
	MeanFreeGPUs     float64 `json:"mean_free_gpus"`
	MeanStrandedGPUs float64 `json:"mean_stranded_gpus"`
	// StrandedGPUHours is the stranded GPUs integrated over the samples'
	// spacing: free GPU time no waiting job's shape could use.
	StrandedGPUHours float64 `json:"stranded_gpu_hours"`
	// MaxWaiting is the most queued requests for the cluster and card in a
	// sample.
	MaxWaiting int64 `json:"max_waiting"`
}

// Waste is one job attempt's idle time in the period.
type Waste struct {
	Job          string   `json:"job"`
	Team         string   `json:"team"`
	Project      string   `json:"project"`
	Pool         string   `json:"pool"`
	Card         string   `json:"card"`
	GPUHours     float64  `json:"gpu_hours"`
	IdleGPUHours float64  `json:"idle_gpu_hours"`
	IdleRatio    float64  `json:"idle_ratio"`
	IdleCost     *float64 `json:"idle_cost"`
	Currency     string   `json:"currency"`
}

// Finding is one episode of an analyzer finding that overlapped the period (from
// the findings table, read at the episode's latest version): the episode runs from
// Since (FirstSeen when that is earlier) to ResolvedAt, or to LastSeen while it is
// unresolved. It is listed whether it is open now or resolved since, so a report
// on a past period reads the same whenever it is run, except that an episode
// still open keeps growing.
type Finding struct {
	Kind     string    `json:"kind"`
	Severity string    `json:"severity"`
	Job      string    `json:"job"`
	Team     string    `json:"team"`
	Project  string    `json:"project"`
	Pool     string    `json:"pool"`
	Card     string    `json:"card"`
	Since    time.Time `json:"since"`
	LastSeen time.Time `json:"last_seen"`
	// WasteGPUHours and WasteCost are the whole episode's waste (from Since to
	// LastSeen, priced at the card's rate when last seen). WasteCost is 0 with an
	// empty Currency when unpriced.
	WasteGPUHours float64 `json:"waste_gpu_hours"`
	WasteCost     float64 `json:"waste_cost"`
	// PeriodWasteGPUHours and PeriodWasteCost are the period's part of them: their
	// share of the episode's time inside the period (the waste taken as accruing
	// evenly), so a month's findings add up to the month and the parts of an
	// episode in successive periods to its whole.
	PeriodWasteGPUHours float64 `json:"period_waste_gpu_hours"`
	PeriodWasteCost     float64 `json:"period_waste_cost"`
	Currency            string  `json:"currency"`
	Recommendation      string  `json:"recommendation"`
	// ID is the finding's stable id and Episode which time it came back (1 the
	// first time); together they name the episode.
	ID      string `json:"id"`
	Episode int64  `json:"episode"`
	// State is the episode's state at the period's end: "resolved" when it was
	// resolved before the period ended, "open" otherwise (even when resolved later).
	State string `json:"state"`
	// FirstSeen is the analyzer pass that opened the episode; ResolvedAt the pass
	// that resolved it, nil while it is open (it may lie after the period).
	FirstSeen  time.Time  `json:"first_seen"`
	ResolvedAt *time.Time `json:"resolved_at"`
	// GPUs are the GPUs concerned, in GPU-equivalents (a MIG instance counts as its
	// compute slices / 7); GPUUUIDs names them.
	GPUs     float64  `json:"gpus"`
	GPUUUIDs []string `json:"gpu_uuids"`
}

// Failure is one failure reason over the attempts that ended in the period
// (job_failures' taxonomy, docs/finance.md).
type Failure struct {
	Reason   string `json:"reason"`
	Attempts int64  `json:"attempts"`
	// Rate is Attempts over every attempt that ended in the period.
	Rate     float64 `json:"rate"`
	GPUHours float64 `json:"gpu_hours"`
	// Cost is what those attempts cost; FailedRerunCost the part that was rerun.
	Cost            *float64 `json:"cost"`
	FailedRerunCost *float64 `json:"failed_rerun_cost"`
}

// Output is what one team's jobs of one model produced, over the attempts that
// ended in the period (job_output, docs/finance.md). Figures of jobs that
// reported nothing are nil (shown "—"), never 0.
type Output struct {
	Team          string `json:"team"`
	Model         string `json:"model"`
	Unit          string `json:"unit"`
	Jobs          int64  `json:"jobs"`
	ReportingJobs int64  `json:"reporting_jobs"`
	// GPUHours are all the jobs'; Units and UnitsPerGPUHour those of the jobs
	// that reported, over their GPU-hours.
	GPUHours        float64  `json:"gpu_hours"`
	Units           *float64 `json:"units"`
	UnitsPerGPUHour *float64 `json:"units_per_gpu_hour"`
	// CostPerUnits is the reporting jobs' cost per PerUnits units (per 1 M
	// tokens, per 1 k samples or requests).
	PerUnits     int64    `json:"per_units"`
	CostPerUnits *float64 `json:"cost_per_units"`
}

// QueueWait is the queue wait of one team in one pool.
type QueueWait struct {
	Team           string  `json:"team"`
	Pool           string  `json:"pool"`
	Jobs           int64   `json:"jobs"`
	P50Hours       float64 `json:"p50_hours"`
	P95Hours       float64 `json:"p95_hours"`
	QueuedGPUHours float64 `json:"queued_gpu_hours"`
}

// TrendPoint is the idle figures of one day (or hour).
type TrendPoint struct {
	Start        time.Time `json:"start"`
	Label        string    `json:"label"`
	IdleGPUHours float64   `json:"idle_gpu_hours"`
	IdleCost     *float64  `json:"idle_cost"`
	Cost         *float64  `json:"cost"`
}

// UtilCell is the utilisation of one card type in one hour of the day.
type UtilCell struct {
	Card      string  `json:"card"`
	HourOfDay int     `json:"hour_of_day"`
	GPUHours  float64 `json:"gpu_hours"`
	// SMActiveMean is SM activity averaged over the GPU-hours, 0..1; nil when none
	// was measured.
	SMActiveMean *float64 `json:"sm_active_mean"`
	// ActiveRatio is the active share of the measured time, 0..1.
	ActiveRatio *float64 `json:"active_ratio"`
}
