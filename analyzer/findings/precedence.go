package findings

import (
	"slices"

	"github.com/gpupool/gpupool/schemas"
)

// signalStall is not a finding kind: it is the evidence of an abrupt drop from a
// productive phase to a flat one (every GPU of the job flat through the hung
// window after a busy baseline) that did not make a hung finding — one GPU, GPUs
// that stopped one after another, a flat engine on a single GPU. It opens
// nothing, but a stuck job must not be told to shrink, so it takes part in the
// precedence below like a finding.
const signalStall schemas.FindingKind = "stall"

// precedenceRule says that a job with a finding (or signal) of kind by, seen in
// this pass or open, receives none of the kinds in suppresses for the same
// period. only, when set, narrows what is suppressed to the detections it holds
// for.
type precedenceRule struct {
	by         schemas.FindingKind
	suppresses []schemas.FindingKind
	only       func(detection) bool
}

// adviceKinds are right-sizing, sharing and tuning advice: what a working job
// receives (schemas.KindInfo.Advice). A job that is stuck or idle receives none
// of them.
var adviceKinds = kindsWhere(func(d schemas.KindInfo) bool { return d.Advice })

func kindsWhere(keep func(schemas.KindInfo) bool) []schemas.FindingKind {
	var out []schemas.FindingKind
	for _, d := range schemas.KindInfos() {
		if keep(d) {
			out = append(out, d.Kind)
		}
	}
	return out
}

// precedence is the one order conflicting evidence resolves in
// (docs/analyzer.md, "Precedence"), read from the kinds' descriptors
// (schemas.KindInfo's ExplainsAdvice and Explains): a hang, a stall or idleness
// explains a job's low activity and excludes every advice about its size or
// sharing; a hang explains its idleness; a memory, card or bandwidth finding
// explains its low SM activity; the long-inactivity zombie of a running job is
// its idleness or hang counted again. The stall signal, which is not a kind,
// excludes advice as a hang does.
var precedence = buildPrecedence(schemas.KindInfos())

func buildPrecedence(infos []schemas.KindInfo) []precedenceRule {
	rules := []precedenceRule{{by: signalStall, suppresses: adviceKinds}}
	for _, d := range infos {
		if d.ExplainsAdvice {
			rules = append(rules, precedenceRule{by: d.Kind, suppresses: adviceKinds})
		}
		for _, e := range d.Explains {
			r := precedenceRule{by: d.Kind, suppresses: []schemas.FindingKind{e.Kind}}
			if reason := e.Reason; reason != "" {
				r.only = func(x detection) bool { return x.reason == reason }
			}
			rules = append(rules, r)
		}
	}
	return rules
}

// applyPrecedence removes from detected what precedence suppresses, given the
// open findings and the jobs with a stall signal. Suppressors are read before
// anything is removed, so the outcome does not depend on the rules' order.
func applyPrecedence(open map[string]schemas.Finding, detected map[schemas.FindingKind][]detection, stalled map[string]bool) {
	by := map[schemas.FindingKind]map[string]bool{}
	for _, r := range precedence {
		if by[r.by] != nil {
			continue
		}
		if r.by == signalStall {
			by[r.by] = stalled
			continue
		}
		by[r.by] = jobsWith(open, detected, r.by)
	}
	for _, r := range precedence {
		jobs := by[r.by]
		for _, k := range r.suppresses {
			detected[k] = slices.DeleteFunc(detected[k], func(d detection) bool {
				return (r.only == nil || r.only(d)) && d.f.Job != "" && jobs[d.f.Job]
			})
		}
	}
}

// suppressedBy returns the kinds that suppress k (for the docs test).
func suppressedBy(k schemas.FindingKind) []schemas.FindingKind {
	var out []schemas.FindingKind
	for _, r := range precedence {
		if slices.Contains(r.suppresses, k) && !slices.Contains(out, r.by) {
			out = append(out, r.by)
		}
	}
	return out
}
