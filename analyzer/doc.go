// Package analyzer reads the store and says what the fleet did and what it cost.
//
// Service runs a pass every interval (gpupool analyzer, the demo on simulated time,
// gpupool analyze on a trace's clock): it brings the chargeback tables up to date
// (package chargeback: per job attempt GPU-hours used and idle, cost, queue wait,
// failed reruns, energy, rolled up hourly behind the finance views), runs the
// finding detectors (package findings: idle, zombie, memory-bound, wrong card, low
// utilisation, with evidence, cost and a lifecycle, published on the bus), and
// updates the pool metrics. The demo's run summary (Summarize) lives here too;
// the price book (reading, loading, checks, lookups) is package pricebook. Passes
// on a clock other than the wall's are run by package clock; package
// traceanalysis runs a trace through ingest and the passes in a temporary store.
//
// In: a store.Store holding gpu_samples, process_samples and the jobs view. Out:
// *store.Result tables. Hours are GPU-hours (a MIG slice counts as its share of the
// GPU's 7 compute slices); activity figures are ratios 0..1.
package analyzer
