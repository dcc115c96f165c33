package findings

import (
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// Window is kind k's detection window under t: how long its condition must hold
// before a pass can see it (0 for a kind without one).
func (t Thresholds) Window(k schemas.FindingKind) time.Duration {
	switch k {
	case schemas.KindIdle:
		return t.Idle.Window
	case schemas.KindZombie:
		return t.Zombie.OrphanWindow
	case schemas.KindHung:
		return t.Hung.Window
	case schemas.KindMemoryCapacity:
		return t.MemoryCapacity.Window
	case schemas.KindMemoryBound:
		return t.MemoryBound.Window
	case schemas.KindWrongCard:
		return t.WrongCard.Window
	case schemas.KindLowUtil:
		return max(t.LowUtil.Window, t.LowUtil.MinRuntime)
	case schemas.KindComputeBound:
		return t.ComputeBound.Window
	}
	return 0
}
