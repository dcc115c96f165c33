// Package alerts delivers findings and scheduler notices to people on Slack.
//
// In: JSON messages on gpupool.findings.<kind> (the analyzer's findings as they open,
// escalate, change and resolve) and gpupool.alerts.<team> (the scheduler's notices:
// "will be reclaimed in 15 min"), read from JetStream through a durable consumer.
// Out: Block Kit messages, one per finding, routed to the owning team's channel, sent
// through an incoming webhook or a bot token; with a bot token later events update the
// original message, with a webhook they follow as new messages.
//
// Nothing is lost while Slack is down: a message is acked only after Slack accepted
// it, so JetStream keeps the rest. Nothing is sent twice: which events of which
// finding reached which channel is recorded in a JetStream key-value bucket before the
// message is acked, and checked before sending. Posts are spaced per channel
// (Slack allows about one message per second per channel), and 429 and 5xx answers
// are retried after Slack's Retry-After or a capped backoff.
package alerts

import (
	"encoding/json"
	"fmt"
	"time"
)

// Events an Alert can carry (the analyzer's, plus the scheduler's notice).
const (
	EventOpened    = "opened"
	EventEscalated = "escalated"
	EventChanged   = "changed"
	EventResolved  = "resolved"
	// EventNotice is a scheduler notice about a finding: what it will do and when.
	EventNotice = "notice"
)

// Alert is one message on gpupool.findings.> or gpupool.alerts.>: the analyzer's
// public finding JSON, plus the scheduler's fields for notices.
type Alert struct {
	Event         string             `json:"event"`
	ID            string             `json:"id"`
	Kind          string             `json:"kind"`
	State         string             `json:"state"`
	Episode       uint32             `json:"episode"`
	Severity      string             `json:"severity"`
	Cluster       string             `json:"cluster"`
	Node          string             `json:"node"`
	Job           string             `json:"job"`
	Team          string             `json:"team"`
	Project       string             `json:"project"`
	Pool          string             `json:"pool"`
	Card          string             `json:"card"`
	GPUUUIDs      []string           `json:"gpu_uuids"`
	PID           uint32             `json:"pid"`
	FirstSeen     time.Time          `json:"first_seen"`
	LastSeen      time.Time          `json:"last_seen"`
	UpdatedAt     time.Time          `json:"updated_at"`
	Evidence      map[string]float64 `json:"evidence"`
	WasteGPUHours float64            `json:"waste_gpu_hours"`
	WasteCost     float64            `json:"waste_cost"`
	Currency      string             `json:"currency"`
	// Recommendation is the analyzer's advice (wrong_card: a smaller card).
	Recommendation string `json:"recommendation,omitempty"`
	// FindingID ties a scheduler notice to its finding (ID may then be empty).
	FindingID string `json:"finding_id,omitempty"`
	// Action is what the scheduler will do (notify, reclaim, requeue, kill), at
	// ActionAt; DryRun says it will only record it.
	Action   string    `json:"action,omitempty"`
	ActionAt time.Time `json:"action_at,omitempty"`
	DryRun   bool      `json:"dry_run,omitempty"`
}

// Key is the finding the alert belongs to: ID and episode (a finding that resolved
// and came back is a new episode, and a new Slack message).
func (a *Alert) Key() string {
	id := a.ID
	if id == "" {
		id = a.FindingID
	}
	return fmt.Sprintf("%s-%d", id, a.Episode)
}

// Decode reads an alert and checks it names a finding and an event.
func Decode(data []byte) (*Alert, error) {
	var a Alert
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("alert: %w", err)
	}
	if a.ID == "" && a.FindingID == "" {
		return nil, fmt.Errorf("alert: no id or finding_id")
	}
	switch a.Event {
	case EventOpened, EventEscalated, EventChanged, EventResolved, EventNotice:
	default:
		return nil, fmt.Errorf("alert %s: unknown event %q", a.Key(), a.Event)
	}
	return &a, nil
}
