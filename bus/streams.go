package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gpupool/gpupool/schemas"
)

// StreamsConfig sets the retention of gpupool's streams. Limits are what JetStream
// holds while ingest is behind or the store is down: when a samples stream reaches
// MaxAge or MaxBytes, its oldest messages are discarded (and never stored), so size
// them for the longest store outage you want to ride out.
type StreamsConfig struct {
	// Manage creates the streams and sets their limits on Open. False: another
	// process, whose credential has the streams role, manages them, and Open only
	// checks that they exist (a least-privilege credential may not change them).
	Manage bool `yaml:"manage"`
	// Replicas per stream (1 for a single server, 3 in a JetStream cluster).
	Replicas int `yaml:"replicas"`
	// SamplesMaxAge and SamplesMaxBytes bound the samples stream.
	SamplesMaxAge   time.Duration `yaml:"samples_max_age"`
	SamplesMaxBytes int64         `yaml:"samples_max_bytes"`
	// JobsMaxAge bounds the job events stream.
	JobsMaxAge time.Duration `yaml:"jobs_max_age"`
	// DeadLetterMaxAge bounds the dead-letter stream.
	DeadLetterMaxAge time.Duration `yaml:"dead_letter_max_age"`
	// FindingsMaxAge bounds the stream of findings and alerts (what the Slack
	// alerter has not delivered within it is lost).
	FindingsMaxAge time.Duration `yaml:"findings_max_age"`
	// DuplicateWindow is how long JetStream remembers message IDs, so a batch a
	// collector publishes twice (a retry after a lost ack) is stored once.
	DuplicateWindow time.Duration `yaml:"duplicate_window"`
}

// DefaultStreamsConfig returns the default retention.
func DefaultStreamsConfig() StreamsConfig {
	return StreamsConfig{
		Manage:           true,
		Replicas:         1,
		SamplesMaxAge:    72 * time.Hour,
		SamplesMaxBytes:  20 << 30,
		JobsMaxAge:       30 * 24 * time.Hour,
		DeadLetterMaxAge: 14 * 24 * time.Hour,
		FindingsMaxAge:   14 * 24 * time.Hour,
		DuplicateWindow:  10 * time.Minute,
	}
}

// Validate checks the configuration.
func (c StreamsConfig) Validate() error {
	switch {
	case c.Replicas < 1 || c.Replicas > 5:
		return schemas.Fieldf("replicas", "%d is not within 1..5", c.Replicas)
	case c.SamplesMaxAge < time.Minute:
		return schemas.Fieldf("samples_max_age", "%s is shorter than a minute", c.SamplesMaxAge)
	case c.SamplesMaxBytes < 1<<20:
		return schemas.Fieldf("samples_max_bytes", "%d is less than 1 MiB", c.SamplesMaxBytes)
	case c.JobsMaxAge < time.Minute:
		return schemas.Fieldf("jobs_max_age", "%s is shorter than a minute", c.JobsMaxAge)
	case c.DeadLetterMaxAge < time.Minute:
		return schemas.Fieldf("dead_letter_max_age", "%s is shorter than a minute", c.DeadLetterMaxAge)
	case c.FindingsMaxAge < time.Minute:
		return schemas.Fieldf("findings_max_age", "%s is shorter than a minute", c.FindingsMaxAge)
	case c.DuplicateWindow < time.Second || c.DuplicateWindow > c.SamplesMaxAge:
		return schemas.Fieldf("duplicate_window", "%s must be at least 1s and at most samples_max_age", c.DuplicateWindow)
	}
	return nil
}

// StreamConfigs returns the JetStream configuration of every gpupool stream.
func (c StreamsConfig) StreamConfigs() []jetstream.StreamConfig {
	return []jetstream.StreamConfig{
		{
			Name:        StreamSamples,
			Description: "gpupool sample batches from collectors",
			Subjects:    []string{SamplesPrefix + ".>"},
			// Limits, not WorkQueue: messages stay after they are acked, so ingest can
			// rebuild an interrupted batch from the stream (see ingest), and a new
			// consumer can replay history.
			Retention:  jetstream.LimitsPolicy,
			Discard:    jetstream.DiscardOld,
			MaxAge:     c.SamplesMaxAge,
			MaxBytes:   c.SamplesMaxBytes,
			Storage:    jetstream.FileStorage,
			Replicas:   c.Replicas,
			Duplicates: c.DuplicateWindow,
		},
		{
			Name:        StreamJobs,
			Description: "gpupool job events from schedulers and collectors",
			Subjects:    []string{JobsPrefix + ".>"},
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			MaxAge:      c.JobsMaxAge,
			Storage:     jetstream.FileStorage,
			Replicas:    c.Replicas,
			Duplicates:  c.DuplicateWindow,
		},
		{
			Name:        StreamFindings,
			Description: "gpupool findings (gpupool.findings.<kind>) and notices (gpupool.alerts.<team>), for alerting",
			Subjects:    []string{FindingsPrefix + ".>", AlertsPrefix + ".>"},
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			MaxAge:      c.FindingsMaxAge,
			Storage:     jetstream.FileStorage,
			Replicas:    c.Replicas,
			Duplicates:  c.DuplicateWindow,
		},
		{
			Name:        StreamDeadLetter,
			Description: "messages gpupool ingest could not store, with the reason in headers",
			Subjects:    []string{DeadLetterPrefix + ".>"},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      c.DeadLetterMaxAge,
			Storage:     jetstream.FileStorage,
			Replicas:    c.Replicas,
		},
	}
}

// EnsureStreams creates gpupool's streams, or updates their limits to cfg; running it
// again changes nothing. With cfg.Manage false it only checks that they exist.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, cfg StreamsConfig) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("streams: %w", err)
	}
	for _, sc := range cfg.StreamConfigs() {
		if !cfg.Manage {
			if _, err := js.Stream(ctx, sc.Name); err != nil {
				return fmt.Errorf("streams: %s: %w (with streams.manage false, a process whose credential has the streams role creates it)%s",
					sc.Name, err, violation(js, ""))
			}
			continue
		}
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				continue
			}
			return fmt.Errorf("streams: create or update %s: %w%s", sc.Name, err,
				violation(js, "a credential without the streams role needs bus.streams.manage: false"))
		}
	}
	return nil
}

// violation names the permissions violation the connection last saw, which a
// JetStream request only shows as a timeout, and what to do about it.
func violation(js jetstream.JetStream, todo string) string {
	err := js.Conn().LastError()
	switch {
	case !errors.Is(err, nats.ErrPermissionViolation):
		return ""
	case todo == "":
		return fmt.Sprintf(" (%v)", err)
	}
	return fmt.Sprintf(" (%v: %s)", err, todo)
}
