package ingest

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/gpupool/gpupool/store/chdb"
)

// Config configures ingest.
type Config struct {
	// Durable is the consumer name prefix shared by every ingest process; the
	// samples and jobs consumers are <Durable>-samples and <Durable>-jobs.
	Durable string `yaml:"durable"`
	// BatchRows flushes a batch once it holds this many rows. ClickHouse prefers
	// large, few inserts (about one per second per table): at a high rate batches
	// fill by rows, at a low rate BatchAge flushes them.
	BatchRows int `yaml:"batch_rows"`
	// BatchAge flushes a batch this long after its first message, so data is
	// queryable within about BatchAge at low load.
	BatchAge time.Duration `yaml:"batch_age"`
	// FetchMax is the most messages one pull asks for.
	FetchMax int `yaml:"fetch_max"`
	// AckWait is how long JetStream waits for an ack before redelivering.
	AckWait time.Duration `yaml:"ack_wait"`
	// MaxAckPending bounds messages delivered but not yet acked, per consumer.
	MaxAckPending int `yaml:"max_ack_pending"`
	// MaxFutureSkew rejects samples timestamped further ahead of ingest's clock.
	MaxFutureSkew time.Duration `yaml:"max_future_skew"`
	// IntentBucket is the key-value bucket holding batch intents.
	IntentBucket string `yaml:"intent_bucket"`
	// IntentTTL is how long an intent is kept at most (normally it is deleted as
	// soon as its messages are acked).
	IntentTTL time.Duration `yaml:"intent_ttl"`
	// RetryMax caps the wait between retries of a failed insert.
	RetryMax time.Duration `yaml:"retry_max"`
	// MaxSampleAge refuses samples older than this (dead letter past_retention):
	// the raw tables' TTL would delete them at once while their rollups kept
	// them. 0: the store's raw retention (store.raw_ttl_days, given with
	// WithRawRetention) less RetentionMargin; none when that is not given.
	MaxSampleAge time.Duration `yaml:"max_sample_age"`
	// DedupRows is how many content keys of committed rows ingest remembers to
	// drop rows sent again under another message ID (dedup.go); 0 checks only
	// within a batch.
	DedupRows int `yaml:"dedup_rows"`
	// GoMemoryLimitMiB is the Go runtime's soft memory limit that `gpupool
	// ingest` sets for its process (runtime/debug.SetMemoryLimit) unless the
	// GOMEMLIMIT variable is set; 0 sets none. Ingest's live heap is about two
	// batches (42–50 MB at 500,000 rows): above the limit the collector runs
	// more often rather than the heap growing (docs/measurements.md#memory).
	// Raise it with batch_rows. Processes that run ingest beside other work (the
	// demo) do not set it.
	GoMemoryLimitMiB int `yaml:"go_memory_limit_mib"`
}

// DefaultGoMemoryLimitMiB is GoMemoryLimitMiB's default: lower peaks in each of 5
// alternating pairs against 100 MiB, at the same median rate
// (docs/measurements.md#memory).
const DefaultGoMemoryLimitMiB = 64

// ApplyProcess applies the settings of a process of ingest's own, as it starts
// to run: the Go memory limit (ApplyMemoryLimit) and, when the process runs no
// engine (release: its store is a ClickHouse server and
// store.chdb.release_startup_code is on), the release of the
// program's start-up code pages (chdb.ReleaseProgramCode: its packages'
// initialisation and its set-up ran once; the embedded store releases them with
// the engine's). On the 256-GPU trace the release took the peak from 109–113 to
// 77–83 MiB (docs/measurements.md#peers).
func (c Config) ApplyProcess(release bool, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c.ApplyMemoryLimit(log)
	if !release {
		return
	}
	before, after, err := chdb.ReleaseProgramCode()
	if err != nil {
		log.Warn("ingest: could not release the program's start-up code pages; it keeps them resident", "err", err)
		return
	}
	log.Info("ingest: released the program's start-up code pages", "file_rss_mib_before", before>>20, "file_rss_mib_after", after>>20)
}

// ApplyMemoryLimit sets the process's Go memory limit to GoMemoryLimitMiB, unless
// it is 0 or the operator set GOMEMLIMIT (which the runtime has applied), and
// logs which limit stands. It returns the limit in bytes, or -1 when it set none.
func (c Config) ApplyMemoryLimit(log *slog.Logger) int64 {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		log.Info("ingest: Go memory limit from the environment", "GOMEMLIMIT", v, "ignored_go_memory_limit_mib", c.GoMemoryLimitMiB)
		return -1
	}
	if c.GoMemoryLimitMiB == 0 {
		return -1
	}
	limit := int64(c.GoMemoryLimitMiB) << 20
	debug.SetMemoryLimit(limit)
	log.Info("ingest: Go memory limit set", "go_memory_limit_mib", c.GoMemoryLimitMiB)
	return limit
}

// RetentionMargin is kept between the raw retention and the oldest sample
// accepted, so that a stored sample is kept at least this long.
const RetentionMargin = time.Hour

// DefaultConfig returns ingest defaults.
func DefaultConfig() Config {
	return Config{
		Durable:       "gpupool-ingest",
		BatchRows:     500_000,
		BatchAge:      time.Second,
		FetchMax:      1000,
		AckWait:       time.Minute,
		MaxAckPending: 50_000,
		MaxFutureSkew: time.Hour,
		IntentBucket:  "gpupool_ingest_intents",
		IntentTTL:     7 * 24 * time.Hour,
		RetryMax:      10 * time.Second,
		DedupRows:     1_000_000,

		GoMemoryLimitMiB: DefaultGoMemoryLimitMiB,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Durable == "":
		return errors.New("durable: empty")
	case c.BatchRows < 1:
		return fmt.Errorf("batch_rows: %d must be at least 1", c.BatchRows)
	case c.BatchAge < time.Millisecond:
		return fmt.Errorf("batch_age: %s is below 1ms", c.BatchAge)
	case c.FetchMax < 1:
		return fmt.Errorf("fetch_max: %d must be at least 1", c.FetchMax)
	case c.AckWait < 4*c.BatchAge || c.AckWait < time.Second:
		return fmt.Errorf("ack_wait: %s must be at least 1s and 4 × batch_age (%s)", c.AckWait, c.BatchAge)
	case c.MaxAckPending < c.FetchMax:
		return fmt.Errorf("max_ack_pending: %d is below fetch_max (%d)", c.MaxAckPending, c.FetchMax)
	case c.MaxFutureSkew <= 0:
		return fmt.Errorf("max_future_skew: %s must be positive", c.MaxFutureSkew)
	case c.IntentBucket == "":
		return errors.New("intent_bucket: empty")
	case c.IntentTTL < c.AckWait:
		return fmt.Errorf("intent_ttl: %s is shorter than ack_wait (%s)", c.IntentTTL, c.AckWait)
	case c.RetryMax < 10*time.Millisecond:
		return fmt.Errorf("retry_max: %s is below 10ms", c.RetryMax)
	case c.MaxSampleAge < 0:
		return fmt.Errorf("max_sample_age: %s must not be negative", c.MaxSampleAge)
	case c.MaxSampleAge > 0 && c.MaxSampleAge <= c.MaxFutureSkew:
		return fmt.Errorf("max_sample_age: %s must be longer than max_future_skew (%s)", c.MaxSampleAge, c.MaxFutureSkew)
	case c.DedupRows < 0:
		return fmt.Errorf("dedup_rows: %d must not be negative", c.DedupRows)
	case c.GoMemoryLimitMiB != 0 && c.GoMemoryLimitMiB < 16:
		return fmt.Errorf("go_memory_limit_mib: %d is below 16 (0 sets no limit)", c.GoMemoryLimitMiB)
	}
	return nil
}
