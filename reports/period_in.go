package reports

import (
	"fmt"
	"time"
)

// ParsePeriodIn parses period (ParsePeriod) with its bounds in the IANA time
// zone tz; the errors name the flags --timezone and --period.
func ParsePeriodIn(period, tz string) (Period, error) {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return Period{}, fmt.Errorf("--timezone: %w (an IANA name: UTC, Europe/Berlin, America/New_York, Asia/Tokyo…)", err)
	}
	p, err := ParsePeriod(period, loc)
	if err != nil {
		return Period{}, fmt.Errorf("--period: %w", err)
	}
	return p, nil
}
