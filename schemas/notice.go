package schemas

import (
	"encoding/json"
	"time"
)

// Notice is the scheduler's message to a job's owner about a finding a policy acts
// on: what it will do next and when. On the bus it is a message on
// gpupool.alerts.<team> with event "notice".
type Notice struct {
	// Time is when the scheduler sent it.
	Time    time.Time
	Team    string
	Project string
	Job     string
	// Policy is the scheduler policy acting on the finding (not on the wire).
	Policy  string
	Finding Finding
	// NextAction is what the policy will do next (reclaim, kill, …) at NextAt,
	// unless the finding clears; empty when this is the last step.
	NextAction string
	NextAt     time.Time
	// Next says it in words; Message is the whole notice in words (neither is on
	// the wire: the alerter writes its own).
	Next    string
	Message string
	// DryRun says the next action will only be recorded.
	DryRun bool
}

// noticeJSON is a notice on the bus: the fields of a finding message the alerter
// reads, with the finding's ID in finding_id and the notice's time in updated_at.
// The finding's state, evidence and waste are not sent (they stay empty).
type noticeJSON struct {
	Event          FindingEvent       `json:"event"`
	ID             string             `json:"id"`
	Kind           FindingKind        `json:"kind"`
	State          FindingState       `json:"state"`
	Episode        uint32             `json:"episode"`
	Severity       Severity           `json:"severity"`
	Cluster        string             `json:"cluster"`
	Node           string             `json:"node"`
	Job            string             `json:"job"`
	Team           string             `json:"team"`
	Project        string             `json:"project"`
	Pool           string             `json:"pool"`
	Card           string             `json:"card"`
	GPUUUIDs       []string           `json:"gpu_uuids"`
	PID            uint32             `json:"pid"`
	FirstSeen      time.Time          `json:"first_seen"`
	LastSeen       time.Time          `json:"last_seen"`
	UpdatedAt      time.Time          `json:"updated_at"`
	Evidence       map[string]float64 `json:"evidence"`
	WasteGPUHours  float64            `json:"waste_gpu_hours"`
	WasteCost      float64            `json:"waste_cost"`
	Currency       string             `json:"currency"`
	Recommendation string             `json:"recommendation,omitempty"`
	FindingID      string             `json:"finding_id,omitempty"`
	Action         string             `json:"action,omitempty"`
	ActionAt       time.Time          `json:"action_at"`
	DryRun         bool               `json:"dry_run,omitempty"`
}

// MarshalJSON writes the notice as it goes on gpupool.alerts.<team>.
func (n Notice) MarshalJSON() ([]byte, error) {
	f := &n.Finding
	return json.Marshal(noticeJSON{
		Event: EventNotice, FindingID: f.ID, Kind: f.Kind, Episode: f.Episode, Severity: f.Severity,
		Cluster: f.Cluster, Node: f.Node, Job: n.Job, Team: n.Team, Project: n.Project, Pool: f.Pool, Card: f.Card,
		GPUUUIDs: f.GPUUUIDs, PID: f.PID, FirstSeen: f.FirstSeen, LastSeen: f.LastSeen, UpdatedAt: n.Time,
		Recommendation: f.Recommendation, Action: n.NextAction, ActionAt: n.NextAt, DryRun: n.DryRun,
	})
}
