// Package enginereplay replays the Alibaba GPU trace of 2023 through the
// scheduler's own placement path (scheduler/placement: State, Compile, Plan
// with conservative backfill), so that the engine's row stands in the same
// table as the policies of package frag, on the same prepared input.
//
// In: frag's replay input (frag.PrepareReplay: the cut cluster's nodes, and
// jobs with a compressed arrival, a recorded run time and a shape). Out: a
// frag.ReplayRun with the same measures as frag's rows (utilisation, waits,
// stranded GPU-hours, tasks never started), taken by a frag.Meter over a
// frag.Cluster that mirrors what the engine placed.
//
// The placement package models GPUs only: no CPU and no memory. A task's CPU
// and memory are therefore ignored, and a CPU-only task starts when it
// arrives; frag.ReplayConfig.GPUOnly gives frag's policies the same view for a
// like-for-like comparison. Times are replay seconds (float64) in frag's
// types, converted to time.Time from a fixed epoch for Plan; no clock is read
// and nothing is random, so the same input gives the same row.
package enginereplay
