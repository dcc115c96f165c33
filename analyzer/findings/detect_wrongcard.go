package findings

import (
	"context"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// wrongCardCondition keeps jobs on whole high-end GPUs (a MIG instance is already
// sized) whose peak memory is a small share of the card's and whose SM activity
// stays low both over all their samples and over their active samples alone
// (however often they are busy: a bursty small job is as small when it runs).
// {cards} holds card types and families: a family
// "H100" matches every "H100-…" type.
const wrongCardCondition = `mig_profiles = ['']
    AND arrayExists(c -> card = c OR startsWith(card, concat(c, '-')), {cards:Array(String)})
    AND peak_mem_mib <= {max_mem_fraction:Float64} * fb_total_mib
    AND sm_q[2] <= {max_sm_p50:Float64} AND sm_q[4] <= {max_sm_p95:Float64}
    AND NOT isNaN(sm_active_q[1]) AND sm_active_q[1] <= {max_sm_p50:Float64} AND sm_active_q[2] <= {max_sm_p95:Float64}
    AND active_fraction >= {min_active:Float64}`

// wrongCardGroups are wrong_card's pool groups.
func wrongCardGroups(cfg Config) []poolGroup[WrongCardConfig] {
	return poolGroups(cfg, func(t Thresholds) WrongCardConfig { return t.WrongCard }, func(c WrongCardConfig) bool { return c.Enabled })
}

// wrongCardReqs asks, per pool group, for the small jobs on big cards
// (wrongCardCondition).
func (a *Analyzer) wrongCardReqs(ps *pass) []statsReq {
	return groupReqs(ps, wrongCardGroups(a.cfg), func(c WrongCardConfig) (time.Duration, statsReq) {
		return c.Window, statsReq{
			window: c.Window, condition: wrongCardCondition,
			params: store.Params{
				"active": floatParam(c.ActiveThreshold), "cards": arrayParam(c.HighEndCards),
				"max_mem_fraction": floatParam(c.MaxPeakMemFraction), "max_sm_p50": floatParam(c.MaxSMP50),
				"max_sm_p95": floatParam(c.MaxSMP95), "min_active": floatParam(c.MinActiveFraction),
			},
		}
	})
}

// detectWrongCard finds small jobs on big cards and recommends the cheapest card
// or MIG profile that holds their peak memory with headroom, with the money it
// would save at the price book's rates. Beside it, it says how the job could share
// its GPU instead (sharingFor: a MIG profile that also covers its bursts, MPS for a
// steady job, time-slicing for a bursty one) and what that frees in GPUs, GPU-hours
// and money a day (evidence share_*); when no card option holds it, sharing is the
// recommendation and what it frees is the finding's waste.
func (a *Analyzer) detectWrongCard(ctx context.Context, ps *pass) ([]detection, error) {
	var out []detection
	all, err := ps.jobStats(ctx, a, schemas.KindWrongCard)
	if err != nil {
		return nil, fmt.Errorf("wrong_card: %w", err)
	}
	for gi, g := range wrongCardGroups(a.cfg) {
		c, stats := g.cfg, all[gi]
		for i := range stats {
			s := &stats[i]
			need := s.peakMemMiB * c.MemHeadroom
			rec, ok := ps.recommend(ctx, a.cfg.CardOptions, s.card, need)
			sh := sharingFor(shareUse{card: s.card, memNeedMiB: need, cardMiB: s.fbTotalMiB, smP95: s.smQ[3],
				busySMP95: s.smActiveQ[1], activeFraction: s.activeFraction}, a.cfg.CardOptions)
			share := 0.0
			switch {
			case ok && rec.priced && rec.current > 0:
				share = 1 - rec.proposed/rec.current
			case !ok:
				share = sh.frees() // sharing is the only way to free it
			}
			d := newJobDetection(schemas.KindWrongCard, s, ps.now.Add(-c.Window), share)
			kv := []any{
				"window_minutes", c.Window.Minutes(), "samples", s.samples, "gpus", d.gpus,
				"peak_mem_mib", s.peakMemMiB, "card_mem_mib", s.fbTotalMiB, "peak_mem_fraction", s.peakMemMiB / s.fbTotalMiB,
				"sm_active_p50", s.smQ[1], "sm_active_p95", s.smQ[3], "active_fraction", s.activeFraction,
				"busy_sm_active_p50", s.smActiveQ[0], "busy_sm_active_p95", s.smActiveQ[1],
			}
			// A MIG profile already recommended for its memory needs no second MIG
			// proposal beside it.
			if ok && rec.option.Slices > 0 && sh.method == ShareMIG {
				sh = sharing{}
			}
			freeText := ""
			if sh.method != "" {
				freed := sh.frees() * d.gpus
				kv = append(kv, "share_tenants", float64(sh.tenants), "share_frees_gpus", freed, "share_frees_gpu_hours_per_day", freed*24)
				freeText = fmt.Sprintf("%.2f GPU (%.1f GPU-h/day)", freed, freed*24)
				if cur, currency, err := ps.price(ctx, s.card); err == nil {
					kv = append(kv, "share_savings_per_day", freed*24*cur)
					freeText += fmt.Sprintf(", %.2f %s/day", freed*24*cur, currency)
				}
			}
			switch {
			case !ok && sh.method != "":
				d.f.Recommended = sh.name
				d.f.Recommendation = fmt.Sprintf("peak memory %.1f GiB of %.0f GiB on %s with SM active %.0f%% (p50) over %s: "+
					"no configured card option holds %.1f GiB; share the GPU: %s frees %s",
					s.peakMemMiB/1024, s.fbTotalMiB/1024, s.card, 100*s.smQ[1], fmtWindow(c.Window), need/1024, sh.name, freeText)
			case !ok:
				d.f.Recommendation = fmt.Sprintf("peak memory %.1f GiB of %.0f GiB on %s with SM active %.0f%% (p50) over %s: "+
					"a smaller card would do, but no configured card option holds %.1f GiB",
					s.peakMemMiB/1024, s.fbTotalMiB/1024, s.card, 100*s.smQ[1], fmtWindow(c.Window), need/1024)
			case rec.priced:
				perDay := (rec.current - rec.proposed) * d.gpus * 24
				kv = append(kv, "price_per_gpu_hour", rec.current, "recommended_price_per_gpu_hour", rec.proposed,
					"savings_per_day", perDay, "savings_per_month", perDay*30)
				d.f.Recommended = rec.option.name()
				d.f.Recommendation = fmt.Sprintf("peak memory %.1f GiB of %.0f GiB on %s with SM active %.0f%% (p50) over %s: "+
					"move to %s; saves %.2f %s/day, %.2f %s/month",
					s.peakMemMiB/1024, s.fbTotalMiB/1024, s.card, 100*s.smQ[1], fmtWindow(c.Window),
					rec.option.name(), perDay, rec.currency, perDay*30, rec.currency)
			default:
				d.f.Recommended = rec.option.name()
				d.f.Recommendation = fmt.Sprintf("peak memory %.1f GiB of %.0f GiB on %s with SM active %.0f%% (p50) over %s: "+
					"move to %s (the price book cannot price the saving)",
					s.peakMemMiB/1024, s.fbTotalMiB/1024, s.card, 100*s.smQ[1], fmtWindow(c.Window), rec.option.name())
			}
			if sh.method != "" && d.f.Recommended != sh.name {
				d.f.Recommendation += "; or share it: " + sh.name + " frees " + freeText
			}
			d.f.Evidence = evidence(kv...)
			out = append(out, d)
		}
	}
	return out, nil
}
