package findings

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is what a finding says is wrong.
type Kind string

// Kinds of findings, named as the simulator's ground truth names its conditions.
const (
	KindIdle        Kind = "idle"
	KindZombie      Kind = "zombie"
	KindMemoryBound Kind = "memory_bound"
	KindWrongCard   Kind = "wrong_card"
	KindLowUtil     Kind = "low_util"
)

// Kinds lists every kind in the order passes run their detectors.
var Kinds = []Kind{KindIdle, KindZombie, KindMemoryBound, KindWrongCard, KindLowUtil}

// State is where a finding is in its life.
type State string

// States of a finding version.
const (
	// StateOpen is the first version of an episode.
	StateOpen State = "open"
	// StateUpdated is a later version of an episode still seen.
	StateUpdated State = "updated"
	// StateResolved is the last version: unseen for Config.ResolveAfter.
	StateResolved State = "resolved"
)

// Severity orders findings for people and policies.
type Severity string

// Severities, lowest first.
const (
	// SeverityInfo is an optimisation hint (memory_bound, low_util).
	SeverityInfo Severity = "info"
	// SeverityWarning is waste someone should act on.
	SeverityWarning Severity = "warning"
	// SeverityCritical is waste past Config.CriticalWasteGPUHours.
	SeverityCritical Severity = "critical"
)

func (s Severity) rank() int {
	return map[Severity]int{SeverityInfo: 1, SeverityWarning: 2, SeverityCritical: 3}[s]
}

// Finding is one problem as the analyzer sees it at one pass: one version of a row
// of the findings table.
type Finding struct {
	// ID is stable for the same problem: a hash of the kind and the job, and for a
	// zombie of the node, GPU, PID and job.
	ID       string
	Kind     Kind
	State    State
	Episode  uint32
	Severity Severity
	Cluster  string
	Node     string
	Job      string
	Team     string
	Project  string
	Pool     string
	// Card is the card type of the GPUs (a MIG instance's parent type).
	Card     string
	GPUUUIDs []string
	// PID is the process of a zombie; 0 for other kinds.
	PID uint32
	// Since is the estimated start of the condition, from which waste is counted.
	Since     time.Time
	FirstSeen time.Time
	LastSeen  time.Time
	// ResolvedAt is set on the resolved version.
	ResolvedAt time.Time
	// UpdatedAt is the pass that wrote this version.
	UpdatedAt time.Time
	// Evidence holds the figures that triggered the finding (ratios 0..1, MiB,
	// bytes/s, minutes, counts), always with window_minutes and samples.
	Evidence      map[string]float64
	WasteGPUHours float64
	WasteCost     float64
	Currency      string
	// Recommended is the card type or MIG profile wrong_card recommends.
	Recommended    string
	Recommendation string
}

// findingID hashes the parts that identify a problem.
func findingID(kind Kind, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(kind))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:10])
}

// findingJSON is the public JSON form (gpupool analyze --format json, the bus).
// The issue fixes kind, job, team, node, gpu_uuid, pid, first_seen, last_seen,
// evidence, waste_gpu_hours and waste_cost; the rest are extra.
type findingJSON struct {
	Event          string             `json:"event,omitempty"`
	ID             string             `json:"id"`
	Kind           Kind               `json:"kind"`
	State          State              `json:"state"`
	Episode        uint32             `json:"episode"`
	Severity       Severity           `json:"severity"`
	Cluster        string             `json:"cluster"`
	Node           string             `json:"node"`
	Job            string             `json:"job"`
	Team           string             `json:"team"`
	Project        string             `json:"project"`
	Pool           string             `json:"pool"`
	Card           string             `json:"card"`
	GPUUUID        string             `json:"gpu_uuid"`
	GPUUUIDs       []string           `json:"gpu_uuids"`
	PID            uint32             `json:"pid"`
	Since          time.Time          `json:"since"`
	FirstSeen      time.Time          `json:"first_seen"`
	LastSeen       time.Time          `json:"last_seen"`
	ResolvedAt     *time.Time         `json:"resolved_at,omitempty"`
	Resolved       bool               `json:"resolved,omitempty"`
	UpdatedAt      time.Time          `json:"updated_at"`
	Evidence       map[string]float64 `json:"evidence"`
	WasteGPUHours  float64            `json:"waste_gpu_hours"`
	WasteCost      float64            `json:"waste_cost"`
	Currency       string             `json:"currency"`
	Recommended    string             `json:"recommended,omitempty"`
	Recommendation string             `json:"recommendation"`
}

func (f *Finding) toJSON(event string) findingJSON {
	j := findingJSON{
		Event: event, ID: f.ID, Kind: f.Kind, State: f.State, Episode: f.Episode, Severity: f.Severity,
		Cluster: f.Cluster, Node: f.Node, Job: f.Job, Team: f.Team, Project: f.Project, Pool: f.Pool, Card: f.Card,
		GPUUUIDs: f.GPUUUIDs, PID: f.PID, Since: f.Since, FirstSeen: f.FirstSeen, LastSeen: f.LastSeen,
		UpdatedAt: f.UpdatedAt, Evidence: f.Evidence, WasteGPUHours: f.WasteGPUHours, WasteCost: f.WasteCost,
		Currency: f.Currency, Recommended: f.Recommended, Recommendation: f.Recommendation,
	}
	if len(f.GPUUUIDs) > 0 {
		j.GPUUUID = f.GPUUUIDs[0]
	}
	if j.GPUUUIDs == nil {
		j.GPUUUIDs = []string{}
	}
	if j.Evidence == nil {
		j.Evidence = map[string]float64{}
	}
	if !f.ResolvedAt.IsZero() {
		t := f.ResolvedAt
		j.ResolvedAt = &t
	}
	// resolved withdraws the finding for consumers that read no state (the
	// scheduler's policies).
	j.Resolved = f.State == StateResolved
	return j
}

// MarshalJSON writes the public form, with gpu_uuid (the first GPU) beside gpu_uuids.
func (f Finding) MarshalJSON() ([]byte, error) { return json.Marshal(f.toJSON("")) }

// clone returns a copy that shares nothing mutable with f.
func (f *Finding) clone() Finding {
	c := *f
	c.GPUUUIDs = slices.Clone(f.GPUUUIDs)
	c.Evidence = maps.Clone(f.Evidence)
	return c
}

// unitWeight is the share of a GPU one unit is: 1 for a whole GPU, compute slices
// / 7 for a MIG instance ("3g.40gb" → 3/7), 1 when the profile cannot be read.
func unitWeight(migProfile string) float64 {
	if migProfile == "" {
		return 1
	}
	n, err := strconv.Atoi(strings.SplitN(migProfile, "g", 2)[0])
	if err != nil || n < 1 || n > 7 {
		return 1
	}
	return float64(n) / 7
}

// round3 keeps evidence readable: three decimals for ratios, more is noise.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
