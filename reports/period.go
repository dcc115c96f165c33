package reports

import (
	"fmt"
	"strings"
	"time"
)

// Period is a half-open time range [From, To) a report covers, named by Label
// ("2026-11", "2026-11-30", "2026-W48").
type Period struct {
	Label string
	From  time.Time
	To    time.Time
}

// Previous is the period of the same length just before p.
func (p Period) Previous() Period {
	switch {
	case len(p.Label) == 7: // month
		from := p.From.AddDate(0, -1, 0)
		return Period{Label: from.Format("2006-01"), From: from, To: p.From}
	case len(p.Label) == 10: // day
		from := p.From.AddDate(0, 0, -1)
		return Period{Label: from.Format("2006-01-02"), From: from, To: p.From}
	}
	from := p.From.AddDate(0, 0, -7)
	y, w := from.ISOWeek()
	return Period{Label: fmt.Sprintf("%d-W%02d", y, w), From: from, To: p.From}
}

// ParsePeriod reads "2026-11" (a month), "2026-11-30" (a day) or "2026-W48" (an ISO
// week), in loc.
func ParsePeriod(s string, loc *time.Location) (Period, error) {
	if t, err := time.ParseInLocation("2006-01", s, loc); err == nil {
		return Period{Label: s, From: t, To: t.AddDate(0, 1, 0)}, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		return Period{Label: s, From: t, To: t.AddDate(0, 0, 1)}, nil
	}
	var y, w int
	if n, err := fmt.Sscanf(s, "%d-W%d", &y, &w); err == nil && n == 2 && w >= 1 && w <= 53 {
		// ISO week 1 holds 4 January; weeks start on Monday.
		jan4 := time.Date(y, 1, 4, 0, 0, 0, 0, loc)
		monday := jan4.AddDate(0, 0, -((int(jan4.Weekday())+6)%7)+7*(w-1))
		return Period{Label: fmt.Sprintf("%d-W%02d", y, w), From: monday, To: monday.AddDate(0, 0, 7)}, nil
	}
	return Period{}, fmt.Errorf("period %q: want a month (2026-11), a day (2026-11-30) or an ISO week (2026-W48)", s)
}

// Relative periods a schedule can ask for. The hyphenated spellings
// (previous-month) are accepted too.
const (
	PreviousDay   = "previous_day"
	PreviousWeek  = "previous_week"
	PreviousMonth = "previous_month"
)

// PeriodBefore returns the day, week or month (kind) that ended at or before t,
// in t's location: a report scheduled at 08:00 on the 1st covers the previous month.
func PeriodBefore(kind string, t time.Time) (Period, error) {
	loc := t.Location()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	switch strings.ReplaceAll(kind, "-", "_") {
	case PreviousDay:
		from := day.AddDate(0, 0, -1)
		return Period{Label: from.Format("2006-01-02"), From: from, To: day}, nil
	case PreviousWeek:
		monday := day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
		from := monday.AddDate(0, 0, -7)
		y, w := from.ISOWeek()
		return Period{Label: fmt.Sprintf("%d-W%02d", y, w), From: from, To: monday}, nil
	case PreviousMonth:
		first := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
		from := first.AddDate(0, -1, 0)
		return Period{Label: from.Format("2006-01"), From: from, To: first}, nil
	}
	return Period{}, fmt.Errorf("period %q: want %s, %s or %s", kind, PreviousDay, PreviousWeek, PreviousMonth)
}

// ParseTime reads a UTC time given as RFC 3339, "YYYY-MM-DD hh:mm:ss" or a date.
func ParseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339, time.DateTime, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time (RFC 3339 or YYYY-MM-DD)", s)
}

// ParseRange reads a [from, to) window given as RFC 3339 or YYYY-MM-DD (UTC): an
// empty to is now, an empty from is def before to. Errors name the flag.
func ParseRange(from, to string, now time.Time, def time.Duration) (time.Time, time.Time, error) {
	end := now.UTC()
	var err error
	if to != "" {
		if end, err = ParseTime(to); err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("--to: %w", err)
		}
	}
	start := end.Add(-def)
	if from != "" {
		if start, err = ParseTime(from); err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("--from: %w", err)
		}
	}
	if !end.After(start) {
		return time.Time{}, time.Time{}, fmt.Errorf("--from %s is not before --to %s", start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	return start, end, nil
}
