package schemas

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// FindingEvent is what a message on gpupool.findings.> or gpupool.alerts.> says
// happened to a finding.
type FindingEvent string

// Events of a finding: the analyzer's lifecycle events on gpupool.findings.<kind>,
// and the scheduler's notice on gpupool.alerts.<team>.
const (
	// EventOpened: a finding opened (a new problem, or one come back).
	EventOpened FindingEvent = "opened"
	// EventEscalated: an open finding's severity rose.
	EventEscalated FindingEvent = "escalated"
	// EventChanged: an open finding's GPUs or recommendation changed.
	EventChanged FindingEvent = "changed"
	// EventResolved: a finding was resolved.
	EventResolved FindingEvent = "resolved"
	// EventNotice: the scheduler tells a finding's owner what it will do and when.
	EventNotice FindingEvent = "notice"
)

// FindingEvents lists every event a message may carry.
var FindingEvents = []FindingEvent{EventOpened, EventEscalated, EventChanged, EventResolved, EventNotice}

// findingJSON is the finding's public JSON form (gpupool analyze --format json, the
// bus, the scheduler's POST /v1/findings). The fields kind, job, team, node,
// gpu_uuid, pid, first_seen, last_seen, evidence, waste_gpu_hours and waste_cost are
// a public contract; the rest are extra. gpu_uuid is the first of gpu_uuids, for
// readers that expect one GPU; resolved repeats state == "resolved" for readers
// that read no state (the scheduler's policies).
type findingJSON struct {
	Event          FindingEvent       `json:"event,omitempty"`
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
	Labels         map[string]string  `json:"labels,omitempty"`
}

// toJSON is f's public form with event set ("" for none).
func (f *Finding) toJSON(event FindingEvent) findingJSON {
	j := findingJSON{
		Event: event, ID: f.ID, Kind: f.Kind, State: f.State, Episode: f.Episode, Severity: f.Severity,
		Cluster: f.Cluster, Node: f.Node, Job: f.Job, Team: f.Team, Project: f.Project, Pool: f.Pool, Card: f.Card,
		GPUUUIDs: f.GPUUUIDs, PID: f.PID, Since: f.Since, FirstSeen: f.FirstSeen, LastSeen: f.LastSeen,
		UpdatedAt: f.UpdatedAt, Evidence: f.Evidence, WasteGPUHours: f.WasteGPUHours, WasteCost: f.WasteCost,
		Currency: f.Currency, Recommended: f.Recommended, Recommendation: f.Recommendation, Labels: f.Labels,
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
	j.Resolved = f.Resolved()
	return j
}

// finding is the Finding j describes. Empty lists and maps become nil; resolved
// without a state means the resolved state.
func (j *findingJSON) finding() Finding {
	f := Finding{
		ID: j.ID, Kind: j.Kind, State: j.State, Episode: j.Episode, Severity: j.Severity,
		Cluster: j.Cluster, Node: j.Node, Job: j.Job, Team: j.Team, Project: j.Project, Pool: j.Pool, Card: j.Card,
		GPUUUIDs: j.GPUUUIDs, PID: j.PID, Since: j.Since, FirstSeen: j.FirstSeen, LastSeen: j.LastSeen,
		UpdatedAt: j.UpdatedAt, Evidence: j.Evidence, WasteGPUHours: j.WasteGPUHours, WasteCost: j.WasteCost,
		Currency: j.Currency, Recommended: j.Recommended, Recommendation: j.Recommendation, Labels: j.Labels,
	}
	if j.ResolvedAt != nil {
		f.ResolvedAt = *j.ResolvedAt
	}
	if j.Resolved && f.State == "" {
		f.State = StateResolved
	}
	if len(f.GPUUUIDs) == 0 {
		f.GPUUUIDs = nil
	}
	if len(f.Evidence) == 0 {
		f.Evidence = nil
	}
	if len(f.Labels) == 0 {
		f.Labels = nil
	}
	return f
}

// MarshalJSON writes the public form, with gpu_uuid (the first GPU) beside gpu_uuids.
func (f Finding) MarshalJSON() ([]byte, error) { return json.Marshal(f.toJSON("")) }

// UnmarshalJSON reads the public form. A field the form does not have is an error,
// so that a misspelt field in a push to the scheduler is refused rather than
// ignored; values are not checked (DecodeFindingMessage checks a message from the
// bus, the scheduler checks what it is pushed).
func (f *Finding) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j findingJSON
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("finding: %w", err)
	}
	*f = j.finding()
	return nil
}

// FindingMessage is one message on gpupool.findings.> (a lifecycle event of a
// finding) or gpupool.alerts.> (a scheduler notice about one).
type FindingMessage struct {
	// Event is what happened.
	Event FindingEvent
	// Finding is the finding the message is about. For a notice it is
	// Notice.Finding, whose team, project and job are the notice's.
	Finding Finding
	// Notice is the scheduler's notice, set when Event is EventNotice.
	Notice *Notice
}

// messageJSON is what a message on either subject may hold: the finding's public
// form plus a notice's fields.
type messageJSON struct {
	findingJSON
	FindingID string    `json:"finding_id"`
	Action    string    `json:"action"`
	ActionAt  time.Time `json:"action_at"`
	DryRun    bool      `json:"dry_run"`
}

// EncodeFindingMessage is the JSON of m: the finding's public form with "event"
// set, or for a notice the notice's form (Notice.MarshalJSON).
func EncodeFindingMessage(m *FindingMessage) ([]byte, error) {
	if m.Event == EventNotice {
		if m.Notice == nil {
			return nil, fmt.Errorf("finding message %s: %w: event notice without a notice", m.Finding.ID, ErrInvalidValue)
		}
		return json.Marshal(m.Notice)
	}
	if !slices.Contains(FindingEvents, m.Event) {
		return nil, fmt.Errorf("finding message %s: %w: event %q is not one of %v", m.Finding.ID, ErrInvalidValue, m.Event, FindingEvents)
	}
	data, err := json.Marshal(m.Finding.toJSON(m.Event))
	if err != nil {
		return nil, fmt.Errorf("finding message %s: %w", m.Finding.ID, err)
	}
	return data, nil
}

// DecodeFindingMessage reads a message from gpupool.findings.> or
// gpupool.alerts.> and checks that it names a finding (id, or finding_id for a
// notice) and a known event, and that its kind, state and severity, when given,
// are known ones. Errors wrap ErrMalformed (not JSON, or no event or id) or
// ErrInvalidValue (a value no finding has).
func DecodeFindingMessage(data []byte) (*FindingMessage, error) {
	var j messageJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("finding message: %w: %w", ErrMalformed, err)
	}
	id := cmp.Or(j.ID, j.FindingID)
	if id == "" {
		return nil, fmt.Errorf("finding message: %w: no id or finding_id", ErrMalformed)
	}
	switch {
	case j.Event == "":
		return nil, fmt.Errorf("finding message %s: %w: no event (want one of %v)", id, ErrMalformed, FindingEvents)
	case !slices.Contains(FindingEvents, j.Event):
		return nil, fmt.Errorf("finding message %s: %w: event %q is not one of %v", id, ErrInvalidValue, j.Event, FindingEvents)
	case j.Kind != "" && !slices.Contains(FindingKinds, j.Kind):
		return nil, fmt.Errorf("finding message %s: %w: kind %q is not one of %v", id, ErrInvalidValue, j.Kind, FindingKinds)
	case j.State != "" && !slices.Contains([]FindingState{StateOpen, StateUpdated, StateResolved}, j.State):
		return nil, fmt.Errorf("finding message %s: %w: state %q is not open, updated or resolved", id, ErrInvalidValue, j.State)
	case j.Severity != "" && j.Severity.Rank() == 0:
		return nil, fmt.Errorf("finding message %s: %w: severity %q is not one of %v", id, ErrInvalidValue, j.Severity, Severities)
	case j.Resolved && j.State != "" && j.State != StateResolved:
		return nil, fmt.Errorf("finding message %s: %w: resolved is true but state is %q", id, ErrInvalidValue, j.State)
	}
	m := &FindingMessage{Event: j.Event, Finding: j.finding()}
	m.Finding.ID = id
	if m.Event == EventNotice {
		m.Notice = &Notice{
			Time: j.UpdatedAt, Team: j.Team, Project: j.Project, Job: j.Job, Finding: m.Finding,
			NextAction: j.Action, NextAt: j.ActionAt, DryRun: j.DryRun,
		}
	}
	return m, nil
}
