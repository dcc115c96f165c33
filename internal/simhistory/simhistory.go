// Package simhistory turns the simulated fleet's weeks into the hourly history
// the capacity view holds, so that the capacity forecast can be shown and
// backtested on the simulator's history (the demo's summary, make bench).
package simhistory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpupool/gpupool/analyzer/capacity"
	"github.com/gpupool/gpupool/collector/sim"
	"github.com/gpupool/gpupool/schemas"
)

// Series runs the simulated fleet cfg (its Start should be a Monday, 00:00 UTC)
// for a warm-up week (it starts empty, and its long jobs pile up at first) and
// then weeks more, and turns the weeks after the warm-up into the hourly series
// the capacity view would hold: per cluster and card type, the GPUs there,
// running and queued (jobs that accept any card count under the card they ran
// on, and not while they wait). GPUs split into MIG slices, and the jobs on
// them, are left out: a slice is a resource of its own. It is the simulator's history, not the store's:
// a forecast can be shown and backtested on weeks no demo stored.
func Series(ctx context.Context, cfg sim.Config, weeks int) ([]capacity.Series, error) {
	if weeks < 1 {
		return nil, fmt.Errorf("simhistory: %d weeks: want at least 1", weeks)
	}
	fleet, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("simhistory: %w", err)
	}
	monday := cfg.Start
	type job struct {
		cluster, card      string
		gpus               float64
		submit, start, end time.Time
		mig                bool // it ran on a MIG slice
	}
	jobs := map[string]*job{}
	nodeCard := map[string]string{}
	gpus := map[[2]string]float64{}
	for _, n := range fleet.Nodes() {
		nodeCard[n.Name()] = n.CardType()
	}
	// GPUs outside MIG (time-sliced replicas count, as the device plugin offers
	// them): a MIG slice is a resource of its own, which this history leaves out.
	for _, c := range fleet.Capacity() {
		for card, units := range c.Cards {
			if units > 0 {
				gpus[[2]string{c.Name, card}] = float64(units)
			}
		}
	}
	first := monday.Add(capacity.HoursPerWeek * time.Hour)
	end := first.Add(time.Duration(weeks*capacity.HoursPerWeek) * time.Hour)
	for at := monday; at.Before(end); at = at.Add(cfg.Tick) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, e := range fleet.Advance(at) {
			j := jobs[e.Job]
			if j == nil {
				j = &job{cluster: e.Cluster}
				jobs[e.Job] = j
			}
			t := time.UnixMilli(e.TimeMs).UTC()
			switch e.Event {
			case schemas.EventSubmit:
				j.submit, j.card, j.gpus = t, e.Card, float64(e.GPUs)
			case schemas.EventStart:
				j.start = t
				if len(e.Nodes) > 0 {
					j.card = nodeCard[e.Nodes[0]]
				}
				if j.submit.IsZero() {
					j.submit = t
				}
				if j.gpus == 0 {
					j.gpus = float64(len(e.GPUUUIDs))
				}
				j.mig = len(e.GPUUUIDs) > 0 && strings.HasPrefix(e.GPUUUIDs[0], "MIG-")
			case schemas.EventEnd, schemas.EventPreempt:
				j.end = t
			}
		}
	}
	n := weeks * capacity.HoursPerWeek
	byKey := map[[2]string]*capacity.Series{}
	var keys [][2]string
	for k, g := range gpus {
		s := &capacity.Series{Cluster: k[0], Card: k[1], Start: first,
			Capacity: make([]float64, n), Running: make([]float64, n), Queued: make([]float64, n)}
		for i := range s.Capacity {
			s.Capacity[i] = g
		}
		s.Inventory = schemas.Units{Whole: int(g), GPUEquivalents: g}
		byKey[k], keys = s, append(keys, k)
	}
	spread := func(dst []float64, from, to time.Time, gpus float64) {
		if to.IsZero() || to.After(end) {
			to = end
		}
		for h := from.Truncate(time.Hour); h.Before(to); h = h.Add(time.Hour) {
			k := int(h.Sub(first) / time.Hour)
			if k < 0 || k >= n {
				continue
			}
			lo, hi := maxTime(h, from), minTime(h.Add(time.Hour), to)
			dst[k] += gpus * hi.Sub(lo).Hours()
		}
	}
	for _, j := range jobs {
		s := byKey[[2]string{j.cluster, j.card}]
		if s == nil || j.submit.IsZero() || j.mig {
			continue
		}
		queuedTo := j.start
		if queuedTo.IsZero() {
			queuedTo = j.end
		}
		spread(s.Queued, j.submit, queuedTo, j.gpus)
		if !j.start.IsZero() {
			spread(s.Running, j.start, j.end, j.gpus)
		}
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	out := make([]capacity.Series, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
