package bus

import "strings"

// Stream names.
const (
	StreamSamples    = "GPUPOOL_SAMPLES"
	StreamJobs       = "GPUPOOL_JOBS"
	StreamDeadLetter = "GPUPOOL_DEADLETTER"
	StreamFindings   = "GPUPOOL_FINDINGS"
)

// Subject roots.
const (
	SamplesPrefix    = "gpupool.samples"
	JobsPrefix       = "gpupool.jobs"
	DeadLetterPrefix = "gpupool.deadletter"
	// AlertsPrefix carries notices for people that are not findings themselves
	// (the scheduler's "will be reclaimed in 15 min").
	AlertsPrefix = "gpupool.alerts"
)

// AlertsSubject is where notices about a team's jobs are published.
func AlertsSubject(team string) string { return AlertsPrefix + "." + Token(team) }

// Token turns a name into one NATS subject token: characters that separate or match
// tokens (., *, >, whitespace) become "_", and an empty name becomes "_".
func Token(name string) string {
	if name == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '.' || r == '*' || r == '>' || r <= ' ' || r == 0x7f:
			return '_'
		}
		return r
	}, name)
}

// SamplesSubject is where a node's sample batches are published.
func SamplesSubject(cluster, node string) string {
	return SamplesPrefix + "." + Token(cluster) + "." + Token(node)
}

// JobsSubject is where a cluster's job events are published.
func JobsSubject(cluster string) string { return JobsPrefix + "." + Token(cluster) }

// SchedulerToken ends the subjects of the scheduler's own job events.
const SchedulerToken = "scheduler"

// SchedulerJobsSubject is where the scheduler publishes the events of its own jobs
// (source scheduler) in a cluster: gpupool.jobs.<cluster>.scheduler. Only the
// scheduler role may publish there: the collector role's gpupool.jobs.<cluster>
// (or gpupool.jobs.* for every cluster) matches no subject of four tokens, so ingest
// takes an event's arrival on it as the scheduler's identity.
func SchedulerJobsSubject(cluster string) string { return JobsSubject(cluster) + "." + SchedulerToken }

// ParseSamplesSubject returns the cluster and node tokens of
// gpupool.samples.<cluster>.<node>; ok is false for any other subject.
func ParseSamplesSubject(subject string) (cluster, node string, ok bool) {
	rest, ok := strings.CutPrefix(subject, SamplesPrefix+".")
	if !ok {
		return "", "", false
	}
	cluster, node, ok = strings.Cut(rest, ".")
	if !ok || cluster == "" || node == "" || strings.Contains(node, ".") {
		return "", "", false
	}
	return cluster, node, true
}

// ParseJobsSubject returns the cluster token of gpupool.jobs.<cluster> or
// gpupool.jobs.<cluster>.scheduler, and whether it is the scheduler's subject;
// ok is false for any other subject.
func ParseJobsSubject(subject string) (cluster string, scheduler, ok bool) {
	rest, ok := strings.CutPrefix(subject, JobsPrefix+".")
	if !ok {
		return "", false, false
	}
	cluster, tail, more := strings.Cut(rest, ".")
	switch {
	case cluster == "":
		return "", false, false
	case !more:
		return cluster, false, true
	case tail == SchedulerToken:
		return cluster, true, true
	}
	return "", false, false
}

// DeadLetterSubject is where ingest puts messages of a kind ("samples", "jobs") that
// it cannot store.
func DeadLetterSubject(kind string) string { return DeadLetterPrefix + "." + Token(kind) }

// RejectedPrefix is the root of ingest's notices to collectors: one core NATS
// message (not stored) per sample batch ingest dead-lettered, on
// gpupool.rejected.<cluster>.<node> of the node that published it.
const RejectedPrefix = "gpupool.rejected"

// Headers of a rejection notice; its body is ingest's error text.
const (
	// HeaderRejectReason is the dead-letter reason (malformed, schema_version,
	// invalid_value, other), as ingest's metric labels it.
	HeaderRejectReason = "Gpupool-Reason"
	// HeaderRejectRows is how many sample rows (GPU and process) the batch held;
	// absent when it could not be read.
	HeaderRejectRows = "Gpupool-Rows"
)

// RejectedSubject is where ingest tells a node's collector about its batches
// dead-lettered.
func RejectedSubject(cluster, node string) string {
	return RejectedPrefix + "." + Token(cluster) + "." + Token(node)
}

// RejectedFor turns the subject a sample batch was published on into the subject
// of its rejection notices; ok is false for a subject that is not a samples one.
func RejectedFor(samplesSubject string) (string, bool) {
	rest, ok := strings.CutPrefix(samplesSubject, SamplesPrefix+".")
	if !ok || strings.Count(rest, ".") != 1 {
		return "", false
	}
	return RejectedPrefix + "." + rest, true
}

// ActionsPrefix is the root of node-agent command subjects.
const ActionsPrefix = "gpupool.actions"

// ActionsSubject is where the scheduler sends commands to one node's agent
// (request/reply, not stored).
func ActionsSubject(cluster, node string) string {
	return ActionsPrefix + "." + Token(cluster) + "." + Token(node)
}
