package chargeback

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gpupool/gpupool/store"
)

// Store runs the statements Refresh needs; store.Store implements it.
type Store interface {
	store.Querier
	Exec(ctx context.Context, sql string, params store.Params) error
}

// DefaultLookback is how many hours before until every Refresh recomputes even if
// they were refreshed before, so that samples and job events arriving late (a
// collector's disk spool after an outage, an end event after a scheduler restart)
// reach the finance views. Corrections further back need RefreshRange.
const DefaultLookback = 6 * time.Hour

// refreshChunk bounds one INSERT … SELECT: a day of hours, so that a first
// refresh over months of history works in memory-sized steps.
const refreshChunk = 24 * time.Hour

// checksumExpr fingerprints an hour's rows of chargeback_hourly, or of the core
// query, which has the same columns. Figures are rounded so that float noise does
// not look like a change.
const checksumExpr = `sum(cityHash64(toString(gpu_uuid), job, toString(cluster), toString(node), toString(card),
    toString(mig_profile), round(gpu_weight, 9), round(gpu_hours, 9), round(used_gpu_hours, 9),
    round(idle_gpu_hours, 9), round(unmeasured_gpu_hours, 9), round(unobserved_gpu_hours, 9), round(energy_kwh, 9),
    round(ifNull(sm_active_mean, -1), 9), round(ifNull(gr_engine_active_mean, -1), 9), round(queue_wait_hours, 9)))`

// hourlyColumns are the measured columns of chargeback_hourly, in the core
// query's terms.
const hourlyColumns = `hour, gpu_uuid, job, cluster, node, card, mig_profile, gpu_weight, gpu_hours,
    used_gpu_hours, idle_gpu_hours, unmeasured_gpu_hours, unobserved_gpu_hours, energy_kwh, sm_active_mean,
    gr_engine_active_mean, queue_wait_hours`

// Refresh brings chargeback_hourly (and so the finance views) up to until: it
// computes every closed hour (one that ends at or before until) not refreshed
// yet, from the earliest hour in the rollups on a first run, and recomputes the
// DefaultLookback hours before until. An hour whose figures did not change is not
// written again. Refresh is idempotent: running it twice, or after a crash half
// way, leaves the views as one run would.
func Refresh(ctx context.Context, s Store, until time.Time) error {
	end := until.UTC().Truncate(time.Hour)
	res, err := s.Query(ctx, `SELECT
    (SELECT max(hour) FROM chargeback_refreshes) AS last_refreshed,
    (SELECT count() FROM chargeback_refreshes) AS refreshes,
    (SELECT min(hour) FROM gpu_hour) AS first_data,
    (SELECT count() FROM gpu_hour) AS data_hours`, nil)
	if err != nil {
		return fmt.Errorf("chargeback: refresh: read watermarks: %w", err)
	}
	rows := store.Read(res, "refresh watermarks")
	if !rows.Next() {
		return nil // no row: nothing measured yet
	}
	dataHours, refreshes := rows.Int("data_hours"), rows.Int("refreshes")
	first, last := rows.NullTime("first_data"), rows.NullTime("last_refreshed")
	if err := rows.Err(); err != nil {
		return fmt.Errorf("chargeback: refresh: read watermarks: %w", err)
	}
	if dataHours == 0 {
		return nil // nothing measured yet
	}
	if first == nil {
		return fmt.Errorf("chargeback: refresh: earliest hour of gpu_hour is NULL")
	}
	start := end.Add(-DefaultLookback)
	if refreshes == 0 {
		start = *first
	} else if last != nil && last.Add(time.Hour).Before(start) { // a NULL last refresh is ignored, as before the row reader
		start = last.Add(time.Hour)
	}
	if start.Before(*first) {
		start = *first
	}
	return RefreshRange(ctx, s, start, end)
}

// RefreshRange recomputes the hours of [from, to) (from rounded down, to rounded
// down to whole hours): after a backfill of old samples or job events, or a change
// of the rollups. Hours whose figures did not change are left as they are.
//
// Only the chunks holding a measured hour, or an hour refreshed before, are
// recomputed: the work follows the hours of data, not the span, so a trace with a
// year between two stretches costs what its stretches cost.
func RefreshRange(ctx context.Context, s Store, from, to time.Time) error {
	start, end := from.UTC().Truncate(time.Hour), to.UTC().Truncate(time.Hour)
	if !start.Before(end) {
		return nil
	}
	hours, err := hoursToRefresh(ctx, s, start, end)
	if err != nil {
		return err
	}
	for i := 0; i < len(hours); {
		// The chunk starts at the first hour left and takes the hours within a day.
		c := hours[i]
		for i < len(hours) && hours[i].Before(c.Add(refreshChunk)) {
			i++
		}
		if err := refreshHours(ctx, s, c, earliest(c.Add(refreshChunk), end)); err != nil {
			return err
		}
	}
	return nil
}

// hoursToRefresh lists, in order, the hours of [start, end) that hold measured GPU
// time or were refreshed before (whose rows may have to go).
func hoursToRefresh(ctx context.Context, s Store, start, end time.Time) ([]time.Time, error) {
	p := store.Params{"from": timeParam(start), "to": timeParam(end)}
	res, err := s.Query(ctx, `SELECT DISTINCT hour FROM (
    SELECT hour FROM gpu_hour WHERE hour >= {from:DateTime64(3, 'UTC')} AND hour < {to:DateTime64(3, 'UTC')}
    UNION ALL
    SELECT hour FROM chargeback_refreshes WHERE hour >= {from:DateTime64(3, 'UTC')} AND hour < {to:DateTime64(3, 'UTC')}
) ORDER BY hour`, p)
	if err != nil {
		return nil, fmt.Errorf("chargeback: refresh %s to %s: list hours with data: %w", p["from"], p["to"], err)
	}
	rows := store.Read(res, "hours to refresh")
	hours := make([]time.Time, 0, rows.Len())
	for rows.Next() {
		if h := rows.NullTime("hour"); h != nil { // a NULL hour is skipped, as before the row reader
			hours = append(hours, *h)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("chargeback: refresh %s to %s: list hours with data: %w", p["from"], p["to"], err)
	}
	return hours, nil
}

// refreshHours recomputes the whole hours of [from, to), writes the ones that
// changed as a new generation, and then records that generation as current for
// them. Readers (chargeback_hourly_current) see only recorded generations, so
// rows written by a refresh that dies before recording are never counted.
func refreshHours(ctx context.Context, s Store, from, to time.Time) error {
	p := store.Params{"from": timeParam(from), "to": timeParam(to)}
	span := fmt.Sprintf("%s to %s", p["from"], p["to"])
	res, err := s.Query(ctx, `SELECT hour, argMax(checksum, refreshed_at) AS checksum FROM chargeback_refreshes
WHERE hour >= {from:DateTime64(3, 'UTC')} AND hour < {to:DateTime64(3, 'UTC')} GROUP BY hour`, p)
	if err != nil {
		return fmt.Errorf("chargeback: refresh %s: read refresh log: %w", span, err)
	}
	old, err := checksums(res, "refresh log")
	if err != nil {
		return fmt.Errorf("chargeback: refresh %s: read refresh log: %w", span, err)
	}
	var hours []time.Time
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		hours = append(hours, h)
	}
	if len(old) > 0 {
		res, err := s.Query(ctx, "SELECT c.hour AS hour, "+checksumExpr+
			" AS checksum FROM (\n"+renderCore(rollupSources)+"\n) AS c GROUP BY c.hour", p)
		if err != nil {
			return fmt.Errorf("chargeback: refresh %s: fingerprint hours: %w", span, err)
		}
		now, err := checksums(res, "hour fingerprints")
		if err != nil {
			return fmt.Errorf("chargeback: refresh %s: fingerprint hours: %w", span, err)
		}
		var changed []time.Time
		for _, h := range hours {
			was, refreshed := old[h]
			is, ok := now[h]
			if !ok {
				is = "0"
			}
			if !refreshed || was != is {
				changed = append(changed, h)
			}
		}
		hours = changed
	}
	if len(hours) == 0 {
		return nil
	}
	// Compute only the span of the changed hours (often just the newest hour).
	p["from"], p["to"] = timeParam(hours[0]), timeParam(hours[len(hours)-1].Add(time.Hour))
	list := make([]string, len(hours))
	for i, h := range hours {
		list[i] = "'" + h.Format(time.DateTime) + "'"
	}
	p["hours"] = "[" + strings.Join(list, ",") + "]"
	p["gen"] = uuid.NewString()
	p["at"] = timeParam(time.Now())
	insert := "INSERT INTO chargeback_hourly (" + hourlyColumns + ", generation, refreshed_at)\nSELECT " + hourlyColumns +
		", {gen:UUID}, {at:DateTime64(3, 'UTC')}\nFROM (\n" + renderCore(rollupSources) + "\n) AS c\nWHERE has({hours:Array(DateTime('UTC'))}, c.hour)"
	if err := s.Exec(ctx, insert, p); err != nil {
		return fmt.Errorf("chargeback: refresh %s: write %d hours: %w", span, len(hours), err)
	}
	if err := writeRollup(ctx, s, p); err != nil {
		return fmt.Errorf("chargeback: refresh %s: %w", span, err)
	}
	record := `INSERT INTO chargeback_refreshes (hour, generation, refreshed_at, row_count, checksum)
SELECT hs.hour, {gen:UUID}, {at:DateTime64(3, 'UTC')}, w.row_count, w.checksum
FROM (SELECT arrayJoin({hours:Array(DateTime('UTC'))}) AS hour) AS hs
LEFT JOIN (
    SELECT hour, count() AS row_count, ` + checksumExpr + ` AS checksum
    FROM chargeback_hourly
    WHERE generation = {gen:UUID} AND hour >= {from:DateTime64(3, 'UTC')} AND hour < {to:DateTime64(3, 'UTC')}
    GROUP BY hour
) AS w ON w.hour = hs.hour
SETTINGS join_use_nulls = 0`
	if err := s.Exec(ctx, record, p); err != nil {
		return fmt.Errorf("chargeback: refresh %s: record generation: %w", span, err)
	}
	return nil
}

// checksums reads a result of hour and checksum columns into a map by hour (UTC);
// a NULL hour is skipped, as before the row reader.
func checksums(res *store.Result, what string) (map[time.Time]string, error) {
	out := map[time.Time]string{}
	rows := store.Read(res, what)
	for rows.Next() {
		if h := rows.NullTime("hour"); h != nil {
			out[*h] = rows.Str("checksum")
		}
	}
	return out, rows.Err()
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
