package billing

import (
	"slices"
)

// Scope is whose chargeback a report shows: the whole fleet (FleetScope: admin,
// operator and finance, and the scheduled reports of the fleet), or some teams'
// own figures only (TeamScope: a team's token, a team's scheduled report). The
// zero Scope sees nothing.
//
// A report is scoped once, where it is built (Scoped), and every format (HTML,
// CSV, JSON, Parquet, the Slack summary, the console's page and downloads) is
// rendered from that one scoped Report: no renderer filters on its own.
type Scope struct {
	all   bool
	teams []string
}

// FleetScope sees every team and the fleet-wide figures.
func FleetScope() Scope { return Scope{all: true} }

// TeamScope sees the named teams' own figures only.
func TeamScope(teams ...string) Scope {
	return Scope{teams: slices.Clone(teams)}
}

// All reports whether the scope sees the whole fleet.
func (s Scope) All() bool { return s.all }

// Teams are the teams of a team scope (nil for the fleet scope).
func (s Scope) Teams() []string {
	if s.all {
		return nil
	}
	return slices.Clone(s.teams)
}

// Sees reports whether the scope may see a team's figures. No team scope sees
// the figures of no team (team "": capacity, fleet-wide findings).
func (s Scope) Sees(team string) bool {
	return s.all || (team != "" && slices.Contains(s.teams, team))
}

// ReportScope says, in a report, which teams it was cut to.
type ReportScope struct {
	Teams []string `json:"teams"`
}

// Scoped is r as s may see it. The fleet scope gets r itself. A team scope gets a
// new report built from an allow-list of r's parts: the period, and the lines of
// its own teams (teams, projects, most idle jobs, findings, queue wait, output),
// with totals summed from its teams' lines. Everything fleet-wide — card,
// cluster and model breakdowns (they mix every team), unallocated capacity,
// the fragmentation figure (stranded GPU-hours: it names no job or team, but
// is the fleet's, as unallocated capacity is), failures by reason, the idle trend, utilisation, the capacity page, the fleet's
// totals — is left out, and so is any part added to Report later until it is
// named here. r is not changed (a cached report is shared by every viewer).
func Scoped(r *Report, s Scope) *Report {
	if s.all {
		return r
	}
	keep := func(team string) bool { return s.Sees(team) }
	out := &Report{
		Period:    r.Period,
		Previous:  r.Previous,
		Currency:  r.Currency,
		Scope:     &ReportScope{Teams: slices.Clone(s.teams)},
		Teams:     filter(r.Teams, func(l Line) bool { return keep(l.Team) }),
		Projects:  filter(r.Projects, func(l Line) bool { return keep(l.Team) }),
		TopWaste:  filter(r.TopWaste, func(w Waste) bool { return keep(w.Team) }),
		Findings:  filter(r.Findings, func(f Finding) bool { return keep(f.Team) }),
		QueueWait: filter(r.QueueWait, func(q QueueWait) bool { return keep(q.Team) }),
		Output:    filter(r.Output, func(o Output) bool { return keep(o.Team) }),
	}
	if out.Scope.Teams == nil {
		out.Scope.Teams = []string{}
	}
	out.Totals.Figures, out.PreviousTotals = sumLines(out.Teams)
	out.Change = Change{
		GPUHours: change(&out.Totals.GPUHours, &out.PreviousTotals.GPUHours),
		Cost:     change(out.Totals.Cost, out.PreviousTotals.Cost),
	}
	return out
}

// filter is a copy of xs with the elements keep accepts (nil when none).
func filter[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// sumLines is the totals of some teams' lines, this period and the previous one
// (of which the lines carry GPU-hours and cost only). Money is nil when any
// line's is.
// rerunCost is a line's failed-rerun cost: 0, priced, when it has no
// failed-rerun GPU-hours (an unpriced hour elsewhere in the line does not make
// reruns it never had unpriced, nor a team's total beside priced rows).
func rerunCost(f Figures) *float64 {
	if f.FailedRerunCost == nil && f.FailedRerunGPUHours == 0 {
		return ptr(0)
	}
	return f.FailedRerunCost
}

func sumLines(ls []Line) (Figures, Figures) {
	var t, p Figures
	mixed := false
	money := func(sum **float64, v *float64, first bool) {
		switch {
		case first:
			if v != nil {
				*sum = ptr(*v)
			}
		case *sum == nil || v == nil:
			*sum = nil
		default:
			**sum = round(**sum + *v)
		}
	}
	for i, l := range ls {
		first := i == 0
		t.Jobs += l.Jobs
		t.GPUHours = round(t.GPUHours + l.GPUHours)
		t.UsedGPUHours = round(t.UsedGPUHours + l.UsedGPUHours)
		t.IdleGPUHours = round(t.IdleGPUHours + l.IdleGPUHours)
		t.UnmeasuredGPUHours = round(t.UnmeasuredGPUHours + l.UnmeasuredGPUHours)
		t.UnpricedGPUHours = round(t.UnpricedGPUHours + l.UnpricedGPUHours)
		t.FailedRerunGPUHours = round(t.FailedRerunGPUHours + l.FailedRerunGPUHours)
		t.QueueWaitHours = round(t.QueueWaitHours + l.QueueWaitHours)
		t.QueueWaitGPUHours = round(t.QueueWaitGPUHours + l.QueueWaitGPUHours)
		t.EnergyKWh = round(t.EnergyKWh + l.EnergyKWh)
		money(&t.Cost, l.Cost, first)
		money(&t.IdleCost, l.IdleCost, first)
		money(&t.FailedRerunCost, rerunCost(l.Figures), first)
		money(&t.QueueWaitCost, l.QueueWaitCost, first)
		money(&t.EnergyCost, l.EnergyCost, first)
		if first {
			t.Currency = l.Currency
		} else if l.Currency != t.Currency && l.Currency != "" && t.Currency != "" {
			mixed = true
		} else if t.Currency == "" {
			t.Currency = l.Currency
		}
		p.GPUHours = round(p.GPUHours + l.PreviousGPUHours)
		money(&p.Cost, l.PreviousCost, first)
	}
	if mixed { // money of different currencies does not add up
		t.Currency, t.Cost, t.IdleCost, t.FailedRerunCost, t.QueueWaitCost, t.EnergyCost, p.Cost = "", nil, nil, nil, nil, nil, nil
	}
	if len(ls) == 0 {
		t.Cost, t.IdleCost, t.FailedRerunCost, p.Cost = ptr(0), ptr(0), ptr(0), ptr(0)
	}
	return t, p
}
