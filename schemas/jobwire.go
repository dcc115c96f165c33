package schemas

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/gpupool/gpupool/schemas/wirepb"
)

// JobEventBatch is one publish of job events by one producer.
type JobEventBatch struct {
	// Producer names who emitted the events (a collector, the scheduler, the
	// simulator); with Seq it names the batch.
	Producer string
	Seq      uint64
	Events   []JobEvent
}

// EncodeJobEvents appends the wire form of b to dst.
func EncodeJobEvents(dst []byte, b *JobEventBatch) ([]byte, error) {
	pb := &wirepb.JobEventBatch{SchemaVersion: SchemaVersion, Producer: b.Producer, Seq: b.Seq}
	pb.Events = make([]*wirepb.JobEvent, len(b.Events))
	for i := range b.Events {
		e := &b.Events[i]
		pb.Events[i] = &wirepb.JobEvent{
			TsMs: e.TimeMs, Job: e.Job, Event: e.Event, Cluster: e.Cluster, Team: e.Team,
			Project: e.Project, Queue: e.Queue, Pool: e.Pool, ModelName: e.ModelName,
			Workload: e.Workload, Gpus: e.GPUs, Card: e.Card, Nodes: e.Nodes, GpuUuids: e.GPUUUIDs,
			Status: e.Status, ExitCode: e.ExitCode, Attempt: e.Attempt, RerunOf: e.RerunOf,
			Source: e.Source, Labels: e.Labels, MigProfile: e.MIGProfile, MigInstances: e.MIGInstances,
			GpuFraction: e.GPUFraction, Sharing: e.Sharing,
		}
	}
	return proto.MarshalOptions{}.MarshalAppend(dst, pb)
}

// DecodeJobEvents parses data into a JobEventBatch and checks each event's required
// fields and enumerations.
func DecodeJobEvents(data []byte) (*JobEventBatch, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty message (0 bytes; a job event batch declares at least its schema version)", ErrMalformed)
	}
	var pb wirepb.JobEventBatch
	if err := proto.Unmarshal(data, &pb); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if pb.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%w: job event batch declares version %d, this reader reads %d", ErrSchemaVersion, pb.SchemaVersion, SchemaVersion)
	}
	b := &JobEventBatch{Producer: pb.Producer, Seq: pb.Seq, Events: make([]JobEvent, len(pb.Events))}
	for i, e := range pb.Events {
		b.Events[i] = JobEvent{
			TimeMs: e.TsMs, Job: e.Job, Event: e.Event, Cluster: e.Cluster, Team: e.Team,
			Project: e.Project, Queue: e.Queue, Pool: e.Pool, ModelName: e.ModelName,
			Workload: e.Workload, GPUs: e.Gpus, Card: e.Card, Nodes: e.Nodes, GPUUUIDs: e.GpuUuids,
			Status: e.Status, ExitCode: e.ExitCode, Attempt: e.Attempt, RerunOf: e.RerunOf,
			Source: e.Source, Labels: e.Labels, MIGProfile: e.MigProfile, MIGInstances: e.MigInstances,
			GPUFraction: e.GpuFraction, Sharing: e.Sharing,
		}
		if err := ValidateJobEvent(&b.Events[i]); err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
	}
	return b, nil
}

// ValidateJobEvent checks the fields every job event needs, its enumerations,
// and its identifiers (CheckJobEventIdents).
func ValidateJobEvent(e *JobEvent) error {
	switch {
	case e.Job == "":
		return fmt.Errorf("%w: job event has no job key", ErrInvalidValue)
	case e.TimeMs <= 0:
		return fmt.Errorf("%w: job %q: event has no time", ErrInvalidValue, e.Job)
	case !validEvents[e.Event]:
		return fmt.Errorf("%w: job %q: unknown event %q", ErrInvalidValue, e.Job, e.Event)
	case !validStatuses[e.Status]:
		return fmt.Errorf("%w: job %q: unknown status %q", ErrInvalidValue, e.Job, e.Status)
	}
	if err := CheckJobEventIdents(e); err != nil {
		return fmt.Errorf("%w: job %s: %w", ErrInvalidValue, Clip(e.Job), err)
	}
	return CheckJobEventRules(e)
}

// MaxJobGPUs bounds the GPUs one job event asks for: far more than the largest
// training runs hold (about 100,000), far less than a counter's wraparound
// (2³²−1 GPUs, which a sign error upstream produces).
const MaxJobGPUs = 1 << 20

// CheckJobEventRules checks what relates a job event's fields to billing, after
// its identifiers: a submit event names the team the job is billed to (the
// scheduler's API requires one; a start or end event may leave it to the
// submit), and the GPUs asked for are at most MaxJobGPUs (and the MIG
// instances: checkJobEventMIG). Every entrance (ingest,
// the trace reader) applies these rules; the error names the field and the
// reason, and wraps ErrInvalidValue (a missing team also ErrInvalidIdentifier).
func CheckJobEventRules(e *JobEvent) error {
	if e.Event == EventSubmit && e.Team == "" {
		return fmt.Errorf("%w: job %s: %w", ErrInvalidValue, Clip(e.Job), RequireName("team", e.Team))
	}
	if e.GPUs > MaxJobGPUs {
		return fmt.Errorf("%w: job %s: gpus: %d is more than %d (schemas.MaxJobGPUs; a wrapped negative count reads as 4294967295)", ErrInvalidValue, Clip(e.Job), e.GPUs, MaxJobGPUs)
	}
	return checkJobEventMIG(e)
}

// checkJobEventMIG checks a job event's MIG fields: instances only with a
// profile, at most MaxJobGPUs of them, and no whole GPUs beside them (a job is
// of whole GPUs or of MIG instances, never both).
func checkJobEventMIG(e *JobEvent) error {
	switch {
	case e.MIGInstances > 0 && e.MIGProfile == "":
		return fmt.Errorf("%w: job %s: mig_instances: %d without a mig_profile (the profile the instances are of, e.g. 1g.10gb)", ErrInvalidValue, Clip(e.Job), e.MIGInstances)
	case e.MIGInstances > MaxJobGPUs:
		return fmt.Errorf("%w: job %s: mig_instances: %d is more than %d (schemas.MaxJobGPUs)", ErrInvalidValue, Clip(e.Job), e.MIGInstances, MaxJobGPUs)
	case e.MIGProfile != "" && e.GPUs > 0:
		return fmt.Errorf("%w: job %s: gpus: %d with mig_profile %q (a job of MIG instances counts them in mig_instances; gpus is 0)", ErrInvalidValue, Clip(e.Job), e.GPUs, e.MIGProfile)
	}
	return checkJobEventFraction(e)
}

// checkJobEventFraction checks a job event's fraction fields: 1–999
// thousandths with a sharing mode, no whole GPUs or MIG instances beside them,
// and a sharing mode only with a fraction.
func checkJobEventFraction(e *JobEvent) error {
	switch {
	case e.GPUFraction == 0 && e.Sharing != "":
		return fmt.Errorf("%w: job %s: sharing: %q without a gpu_fraction", ErrInvalidValue, Clip(e.Job), e.Sharing)
	case e.GPUFraction == 0:
		return nil
	case e.GPUFraction >= 1000:
		return fmt.Errorf("%w: job %s: gpu_fraction: %d is outside 1–999 (thousandths of one GPU)", ErrInvalidValue, Clip(e.Job), e.GPUFraction)
	case e.Sharing != "timeslice" && e.Sharing != "mps":
		return fmt.Errorf("%w: job %s: sharing: %q is neither \"timeslice\" nor \"mps\"", ErrInvalidValue, Clip(e.Job), e.Sharing)
	case e.GPUs > 0 || e.MIGProfile != "":
		return fmt.Errorf("%w: job %s: gpu_fraction: %d with gpus %d or mig_profile %q (a fraction's gpus is 0)", ErrInvalidValue, Clip(e.Job), e.GPUFraction, e.GPUs, e.MIGProfile)
	}
	return nil
}
