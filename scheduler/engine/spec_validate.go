package engine

import (
	"fmt"
	"time"

	"github.com/gpupool/gpupool/schemas"
)

// checkIdents checks the request's identifiers and numbers by the shared rules
// (schemas' ident.go and numeric.go): team and queue are required names, the
// other names optional, name and model_name text, labels bounded, the time
// limit a duration that does not overflow. It returns the time limit (0: the
// pool's maximum). Submit calls it before anything else reads the request, so
// that no error quotes a 7 MB value.
func (s *JobSpec) checkIdents() (time.Duration, error) {
	for _, c := range [...]struct {
		check    func(string, string) error
		field, v string
	}{
		{schemas.RequireName, "team", s.Team}, {schemas.RequireName, "queue", s.Queue},
		{schemas.CheckName, "project", s.Project}, {schemas.CheckName, "card", s.Card},
		{schemas.CheckName, "cluster", s.Cluster}, {schemas.CheckName, "priority_class", s.PriorityClass},
		{schemas.CheckName, "workload", s.Workload}, {schemas.CheckName, "mig_profile", s.MIGProfile},
		{schemas.CheckText, "name", s.Name}, {schemas.CheckText, "model_name", s.ModelName},
	} {
		if err := c.check(c.field, c.v); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrInvalidJob, err)
		}
	}
	if len(s.Clusters) > MaxJobClusters {
		return 0, fmt.Errorf("%w: clusters: %d named, more than %d", ErrInvalidJob, len(s.Clusters), MaxJobClusters)
	}
	for i, c := range s.Clusters {
		if err := schemas.RequireName(fmt.Sprintf("clusters[%d]", i), c); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrInvalidJob, err)
		}
	}
	for _, l := range [...]struct {
		field string
		m     map[string]string
	}{{"labels", s.Labels}, {"locality", s.Locality}} {
		if err := schemas.CheckLabels(l.field, l.m); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrInvalidJob, err)
		}
	}
	limit, err := schemas.Seconds("time_limit_s", s.TimeLimitS)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalidJob, err)
	}
	return limit, nil
}

// MaxJobClusters bounds JobSpec.Clusters.
const MaxJobClusters = 64

// Validate checks the request's identifiers and numbers as Submit does first
// (the fields a queue, card or pool must also allow are checked by Submit), so
// that a client can refuse a request before sending it. Errors wrap
// ErrInvalidJob and name the field.
func (s JobSpec) Validate() error {
	_, err := s.checkIdents()
	return err
}

// timeLimit is the job's time limit: its own, else its pool's maximum job
// duration (0: none). Submit has checked that TimeLimitS converts.
func (j *Job) timeLimit() time.Duration {
	if limit, err := schemas.Seconds("time_limit_s", j.Spec.TimeLimitS); err == nil && limit > 0 {
		return limit
	}
	if j.q == nil {
		return 0
	}
	return j.q.pool.MaxJobDuration
}
