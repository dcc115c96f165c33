package replay

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Config tunes a Player.
type Config struct {
	// Speed is trace seconds played per wall-clock second: 1 is real time, 10 ten
	// times faster, 0 as fast as possible.
	Speed float64 `yaml:"speed"`
	// Window is how long, in trace time, records are held for regrouping before
	// their Tick is played: the most one node's lines may lag another's.
	Window time.Duration `yaml:"window"`
}

// DefaultConfig plays as fast as possible with a 5 s window (a few collector
// intervals of skew between nodes).
func DefaultConfig() Config {
	return Config{Speed: 0, Window: 5 * time.Second}
}

// MaxWindow bounds Config.Window: records held that long can fill memory.
const MaxWindow = time.Hour

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case math.IsNaN(c.Speed) || math.IsInf(c.Speed, 0) || c.Speed < 0:
		return fmt.Errorf("speed: %v must be 0 (as fast as possible) or positive (1 = real time)", c.Speed)
	case c.Window < 0 || c.Window > MaxWindow:
		return fmt.Errorf("window: %s must be between 0 and %s", c.Window, MaxWindow)
	}
	return nil
}

// Clock is the time a Player waits on in real-time mode.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or until ctx ends (then it returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

// Option configures a Player beyond its Config.
type Option func(*Player)

// WithClock makes the Player wait on c instead of the system clock.
func WithClock(c Clock) Option { return func(p *Player) { p.clock = c } }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
