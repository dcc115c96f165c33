package engine

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// startWindow is when a job may start: not before NotBefore, and, with a daily
// window, only while the local time of day is in [from, to) (a window that
// crosses midnight, 22:00-07:00, runs from 22:00 to 07:00 the next day).
type startWindow struct {
	notBefore time.Time
	daily     bool
	from, to  int // minutes after local midnight
	loc       *time.Location
}

// parseStartWindow reads a spec's NotBefore, Window ("HH:MM-HH:MM") and TimeZone
// (an IANA name; empty: UTC).
func parseStartWindow(s *JobSpec) (startWindow, error) {
	w := startWindow{loc: time.UTC}
	if s.NotBefore != nil {
		w.notBefore = *s.NotBefore
	}
	if s.TimeZone != "" {
		loc, err := time.LoadLocation(s.TimeZone)
		if err != nil {
			return w, fmt.Errorf("time_zone %q: not an IANA time zone (e.g. Europe/Berlin)", s.TimeZone)
		}
		w.loc = loc
	}
	if s.Window == "" {
		return w, nil
	}
	a, b, ok := strings.Cut(s.Window, "-")
	from, err1 := parseClock(a)
	to, err2 := parseClock(b)
	if !ok || err1 != nil || err2 != nil || from == to {
		return w, fmt.Errorf("window %q: want HH:MM-HH:MM with two different times, e.g. 22:00-07:00", s.Window)
	}
	w.daily, w.from, w.to = true, from, to
	return w, nil
}

// parseClock reads HH:MM as minutes after midnight.
func parseClock(s string) (int, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	return hh*60 + mm, nil
}

// allows reports whether a job may start at t, and if not, why.
func (w startWindow) allows(t time.Time) (bool, string) {
	if t.Before(w.notBefore) {
		return false, "not before " + w.notBefore.In(w.loc).Format(time.RFC3339)
	}
	if !w.daily {
		return true, ""
	}
	l := t.In(w.loc)
	m := l.Hour()*60 + l.Minute()
	in := m >= w.from && m < w.to
	if w.from > w.to { // crosses midnight
		in = m >= w.from || m < w.to
	}
	if in {
		return true, ""
	}
	return false, fmt.Sprintf("window: starts only %02d:%02d-%02d:%02d %s", w.from/60, w.from%60, w.to/60, w.to%60, w.loc)
}
