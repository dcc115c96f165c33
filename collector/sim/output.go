package sim

import (
	"math/rand/v2"
	"strconv"

	"github.com/gpupool/gpupool/schemas"
)

// outputStreamB seeds a job's output stream (with its salt), apart from the
// fleet's other draws.
const outputStreamB = 0x6f757470

// output is what j's launcher reports when j ends with status: tokens for a
// language model's inference, requests for another model's, samples for
// training; nothing for a notebook, a bare process, or an attempt that did not
// succeed (its launcher died with it). Rates are per GPU-hour at full activity,
// scaled by the job's activity: 1.5–4 M tokens, 20–100 k requests, 50–300 k
// samples.
func output(j *job, status string, ranMs int64) (units float64, unit string) {
	if status != schemas.StatusSucceeded || j.kind == kindNotebook || j.source == schemas.SourceProcess || ranMs <= 0 {
		return 0, ""
	}
	r := rand.New(rand.NewPCG(j.salt, outputStreamB))
	llm := false
	for _, m := range models {
		if m.name == j.model {
			llm = m.llm
		}
	}
	lo, hi := 50e3, 300e3
	unit = "samples"
	switch {
	case j.workload == schemas.WorkloadInference || j.workload == schemas.WorkloadBatchInference:
		lo, hi, unit = 20e3, 100e3, "requests"
		if llm {
			lo, hi, unit = 1.5e6, 4e6, "tokens"
		}
	}
	activity := float64(j.prof.gr)
	if activity <= 0 {
		activity = 0.5
	}
	gpuHours := float64(j.gpus) * float64(ranMs) / 3.6e6
	return float64(int64((lo + (hi-lo)*r.Float64()) * activity * gpuHours)), unit
}

// outputLabels adds j's output report to labels (made when nil), if it has one.
func outputLabels(labels map[string]string, j *job, status string, ranMs int64) map[string]string {
	units, unit := output(j, status, ranMs)
	if unit == "" {
		return labels
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels[schemas.LabelOutputUnits] = strconv.FormatFloat(units, 'f', 0, 64)
	labels[schemas.LabelOutputUnit] = unit
	return labels
}
