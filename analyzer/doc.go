// Package analyzer reads the store and says what the fleet did: today the run
// summary (GPU-hours by team and card type, utilisation distributions by card type,
// job outcomes and queue wait); the waste findings (idle, zombie, memory-bound,
// wrong card) and chargeback come next.
//
// In: a store.Store holding gpu_samples, process_samples and the jobs view. Out:
// *store.Result tables. Hours are GPU-hours (a MIG slice counts as its share of the
// GPU's 7 compute slices); activity figures are ratios 0..1.
package analyzer
