package summary

import (
	"fmt"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// Findings is one row per finding: kind, severity, owner, where, when and its
// waste.
func Findings(fs []schemas.Finding) *store.Result {
	res := &store.Result{Columns: cols("kind", "String", "severity", "String", "job", "String", "team", "String",
		"node", "String", "gpu_uuid", "String", "pid", "UInt32", "first_seen", "String", "last_seen", "String",
		"waste_gpu_hours", "Float64", "waste_cost", "Float64", "currency", "String")}
	for _, f := range fs {
		gpu := ""
		if len(f.GPUUUIDs) > 0 {
			gpu = f.GPUUUIDs[0]
			if len(f.GPUUUIDs) > 1 {
				gpu += fmt.Sprintf(" +%d", len(f.GPUUUIDs)-1)
			}
		}
		res.Rows = append(res.Rows, []any{string(f.Kind), string(f.Severity), f.Job, f.Team, f.Node, gpu, uint64(f.PID),
			f.FirstSeen.Format("2006-01-02 15:04"), f.LastSeen.Format("2006-01-02 15:04"), f.WasteGPUHours,
			findingCost(f.WasteGPUHours, f.WasteCost, f.Currency), f.Currency})
	}
	return res
}

// FindingsByKind counts finding episodes per kind, in schemas.FindingKinds order, with
// those still open at the end and their waste; the currency is "mixed" when the
// kind's findings are priced in more than one.
func FindingsByKind(fs []schemas.Finding) *store.Result {
	res := &store.Result{Columns: cols("kind", "String", "findings", "UInt64", "open_at_end", "UInt64",
		"wasted_gpu_hours", "Float64", "wasted_cost", "Float64", "currency", "String")}
	type agg struct {
		n, open    uint64
		hours, usd float64
		currency   string
	}
	by := map[schemas.FindingKind]*agg{}
	for _, f := range fs {
		a := by[f.Kind]
		if a == nil {
			a = &agg{}
			by[f.Kind] = a
		}
		a.n++
		if f.State != schemas.StateResolved {
			a.open++
		}
		a.hours += f.WasteGPUHours
		a.usd += f.WasteCost
		if f.Currency != "" {
			if a.currency != "" && a.currency != f.Currency {
				a.currency = "mixed"
			} else if a.currency == "" {
				a.currency = f.Currency
			}
		}
	}
	for _, k := range schemas.FindingKinds {
		if a := by[k]; a != nil {
			res.Rows = append(res.Rows, []any{string(k), a.n, a.open, round2(a.hours), findingCost(a.hours, a.usd, a.currency), a.currency})
		}
	}
	return res
}

// findingCost is a finding's cost cell: the figure in its currency, "unpriced" for
// waste the price book could not price, "—" for no waste; never a number beside
// an empty currency.
func findingCost(hours, cost float64, currency string) any {
	switch {
	case currency != "":
		return round2(cost)
	case hours > 0:
		return "unpriced"
	}
	return "—"
}
