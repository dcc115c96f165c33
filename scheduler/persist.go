package scheduler

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gpupool/gpupool/scheduler/executor"
)

// stateVersion is the version of the job state file's format.
const stateVersion = 1

// savedState is the job state file: the queued and running jobs, so that a
// restarted scheduler has the same queues and knows what runs where.
type savedState struct {
	Version int `json:"version"`
	// Seq is the last place in line handed out.
	Seq  uint64     `json:"seq"`
	Jobs []savedJob `json:"jobs"`
}

// savedJob is a job with the engine's bookkeeping that its JSON leaves out.
type savedJob struct {
	Job
	ReclaimFor    string     `json:"reclaim_for,omitempty"`
	Confirmed     bool       `json:"confirmed,omitempty"`
	NoRequeue     bool       `json:"no_requeue,omitempty"`
	ExpirySkipped bool       `json:"expiry_skipped,omitempty"`
	StopFailures  int        `json:"stop_failures,omitempty"`
	NoStop        bool       `json:"no_stop,omitempty"`
	StopRetryAt   time.Time  `json:"stop_retry_at,omitzero"`
	Suspension    *savedSusp `json:"suspension,omitempty"`
}

// savedSusp is a suspension (see suspension).
type savedSusp struct {
	Target   executor.Target `json:"target"`
	Failures int             `json:"failures,omitempty"`
	RetryAt  time.Time       `json:"retry_at,omitzero"`
}

// saveState returns the engine's queued and running jobs, in line order.
func (e *Engine) saveState() savedState {
	st := savedState{Version: stateVersion, Seq: e.seq, Jobs: []savedJob{}}
	for _, j := range e.jobs {
		sj := savedJob{Job: *j, Confirmed: j.confirmed, NoRequeue: j.noRequeue, ExpirySkipped: j.expirySkipped,
			StopFailures: j.stopFailures, NoStop: j.noStop, StopRetryAt: j.stopRetryAt}
		if j.reclaimFor != nil {
			sj.ReclaimFor = j.reclaimFor.ID
		}
		if sp := j.suspension; sp != nil {
			sj.Suspension = &savedSusp{Target: sp.target, Failures: sp.failures, RetryAt: sp.retryAt}
		}
		st.Jobs = append(st.Jobs, sj)
	}
	slices.SortFunc(st.Jobs, func(a, b savedJob) int { return cmp.Compare(a.Seq, b.Seq) })
	return st
}

// restoreState puts saved jobs back into an engine that has none. A job the
// model no longer allows (its queue, card or cluster gone) is left out and named
// in dropped; a running job whose card or cluster is gone is queued again.
func (e *Engine) restoreState(st savedState) (dropped []string) {
	e.seq = max(e.seq, st.Seq)
	byID := map[string]*Job{}
	for i := range st.Jobs {
		sj := &st.Jobs[i]
		j := new(Job)
		*j = sj.Job
		q := e.queueIdx[j.Spec.Queue]
		if q == nil || j.ID == "" || e.jobs[j.ID] != nil {
			dropped = append(dropped, j.ID)
			continue
		}
		j.q, j.Pool = q, q.cfg.Pool
		cards, err := e.checkSpec(j)
		if err != nil {
			dropped = append(dropped, j.ID)
			continue
		}
		j.cards = cards
		j.waitBlock = block{}
		j.stopFailures, j.noStop, j.stopRetryAt = sj.StopFailures, sj.NoStop, sj.StopRetryAt
		if sp := sj.Suspension; sp != nil {
			j.suspension = &suspension{target: sp.Target, failures: sp.Failures, retryAt: sp.RetryAt}
		}
		_, cardOK := e.cardIdx[j.Card]
		_, clusterOK := e.clusterIdx[j.Cluster]
		switch {
		case (j.State == StateAdmitted || j.State == StateReclaiming) && cardOK && clusterOK:
			e.occupy(j)
			q.running = append(q.running, j)
			switch {
			case j.State == StateReclaiming && sj.Confirmed:
				j.confirmed, j.noRequeue = true, sj.NoRequeue
				e.reclaiming = append(e.reclaiming, j)
			case j.State == StateReclaiming:
				// Its stop may never have reached the executor: the next pass decides again.
				j.State, j.ReclaimBy, j.ReclaimReason = StateAdmitted, time.Time{}, ""
			}
			j.expirySkipped = sj.ExpirySkipped
		case j.State == StateAdmitted || j.State == StateReclaiming || j.State == StateQueued:
			if j.State != StateQueued {
				j.Attempt++
			}
			j.State, j.Card, j.Cluster, j.Borrowed, j.AdmitTime = StateQueued, "", "", 0, time.Time{}
			j.ReclaimBy, j.ReclaimReason, j.WaitReason = time.Time{}, "", ""
			q.insertPending(j)
		default:
			dropped = append(dropped, j.ID)
			continue
		}
		e.jobs[j.ID] = j
		byID[j.ID] = j
		e.seq = max(e.seq, j.Seq)
	}
	for i := range st.Jobs {
		sj := &st.Jobs[i]
		j, f := byID[sj.ID], byID[sj.ReclaimFor]
		if j != nil && f != nil && j.State == StateReclaiming && f.State == StateQueued {
			j.reclaimFor = f
			f.pendingVictims++
		}
	}
	return dropped
}

// readState reads a job state file; a missing one is an empty state.
func readState(path string) (savedState, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return savedState{}, false, nil
	}
	if err != nil {
		return savedState{}, false, err
	}
	var st savedState
	if err := json.Unmarshal(data, &st); err != nil {
		return savedState{}, false, fmt.Errorf("%s: %w", path, err)
	}
	if st.Version != stateVersion {
		return savedState{}, false, fmt.Errorf("%s: version %d, this scheduler reads %d", path, st.Version, stateVersion)
	}
	return st, true, nil
}

// writeFileAtomic writes data to path through a temporary file and a rename, so
// that a crash leaves the old file or the new one, never half of one.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// loadState restores the jobs of the state file, if one is configured. Call it
// before the first pass.
func (s *Service) loadState() error {
	if s.statePath == "" {
		return nil
	}
	st, ok, err := readState(s.statePath)
	if err != nil {
		return fmt.Errorf("scheduler: read the job state (queued and running jobs): %w (move the file away to start with empty queues)", err)
	}
	if !ok {
		return nil
	}
	s.mu.Lock()
	dropped := s.engine.restoreState(st)
	s.mu.Unlock()
	if len(dropped) > 0 {
		s.log.Warn("jobs the model no longer allows were not restored", "jobs", dropped)
	}
	s.log.Info("job state restored", "jobs", len(st.Jobs)-len(dropped), "file", s.statePath)
	return nil
}

// saveState writes the job state file when the jobs changed since it was last
// written. A failure is logged and counted: the next change tries again.
func (s *Service) saveState() {
	if s.statePath == "" {
		return
	}
	s.mu.Lock()
	data, err := json.Marshal(s.engine.saveState())
	s.mu.Unlock()
	if err != nil {
		s.log.Warn("encode the job state", "err", err)
		return
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if bytes.Equal(data, s.saved) {
		return
	}
	if err := writeFileAtomic(s.statePath, data); err != nil {
		s.metrics.inc(s.metrics.recordErrs)
		s.log.Warn("write the job state", "file", s.statePath, "err", err)
		return
	}
	s.saved = data
}
