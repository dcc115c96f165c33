package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/scheduler"
)

// crashChildEnv, set to a directory, makes the test binary a scheduler child
// (crashChild) instead of running tests: TestCrashDuringSubmit kills it.
const crashChildEnv = "GPUPOOL_TEST_SCHEDULER_CHILD"

func init() {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		if err := crashChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "scheduler child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
}

// crashChild runs a scheduler with a job state file and a durable audit
// recorder (fileRecorder) in dir, serving the API until killed; it writes its
// address to dir/addr once it serves.
func crashChild(dir string) error {
	ctx := context.Background()
	svc, err := scheduler.New(scheduler.DefaultConfig(), scheduler.WithStateFile(filepath.Join(dir, "jobs.json")),
		scheduler.WithRecorder(&fileRecorder{path: filepath.Join(dir, "audit.jsonl")}))
	if err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	cfg := auth.DefaultConfig()
	cfg.RateLimit = 0
	cfg.TokensFile = filepath.Join(dir, "tokens")
	g, err := auth.New(ctx, cfg)
	if err != nil {
		return err
	}
	addr, err := Serve(ctx, "127.0.0.1:0", NewHandler(svc, g), nil, nil)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "addr.tmp"), []byte(addr), 0o600); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, "addr.tmp"), filepath.Join(dir, "addr")); err != nil {
		return err
	}
	for { // passes journal too, racing the submits as in a real scheduler
		if err := svc.Pass(ctx); err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fileRecorder is a durable audit trail: JSON lines, fsync'd before Record
// returns (what the store gives the real scheduler).
type fileRecorder struct {
	mu   sync.Mutex
	path string
}

func (r *fileRecorder) Record(_ context.Context, rows []scheduler.Action) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	var buf []byte
	for _, a := range rows {
		data, err := json.Marshal(a)
		if err != nil {
			return err
		}
		buf = append(append(buf, data...), '\n')
	}
	if _, err := f.Write(buf); err != nil {
		return err
	}
	return f.Sync()
}

// Actions reads the rows back, each ID once (a torn last line is skipped).
func (r *fileRecorder) Actions(_ context.Context, f scheduler.ActionFilter) ([]scheduler.Action, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	file, err := os.Open(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var out []scheduler.Action
	seen := map[string]bool{}
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var a scheduler.Action
		if json.Unmarshal(sc.Bytes(), &a) != nil || seen[a.ID] {
			continue
		}
		seen[a.ID] = true
		if (f.Decision == "" || a.Decision == f.Decision) && (!f.PoliciesOnly || a.Policy != "") {
			out = append(out, a)
		}
	}
	return out, sc.Err()
}

// schedulerChild is a running child and its client.
type schedulerChild struct {
	cmd *exec.Cmd
	c   *Client
}

func startChild(t *testing.T, dir string) *schedulerChild {
	t.Helper()
	_ = os.Remove(filepath.Join(dir, "addr"))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		if addr, err := os.ReadFile(filepath.Join(dir, "addr")); err == nil {
			c, err := NewClient("http://"+string(addr), nil, WithToken("tok-admin"))
			if err != nil {
				t.Fatal(err)
			}
			ch := &schedulerChild{cmd: cmd, c: c}
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			go func() { <-done }()
			return ch
		}
		select {
		case err := <-done:
			t.Fatalf("scheduler child exited before serving: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// submitOutcome is what a client learned of one submit.
type submitOutcome struct {
	spec scheduler.JobSpec
	job  string // "": no answer
}

// TestCrashDuringSubmit kills a scheduler (a child process: this test binary
// in crashChild mode) with SIGKILL at random points while 8 clients submit with
// idempotency keys, restarts it, and does it again. At the end, every job whose
// caller got an answer exists exactly once, with its submit audit row and
// caller; the retry of every submit with its key returns the job it queued (the
// first answer's, when there was one), and no key has two jobs.
func TestCrashDuringSubmit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills scheduler processes: not in -short")
	}
	dir := t.TempDir()
	writeTokens(t, filepath.Join(dir, "tokens"))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 38))
	var mu sync.Mutex
	outcomes := map[string]*submitOutcome{} // by key
	const rounds, clients = 5, 8
	for round := range rounds {
		ch := startChild(t, dir)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					key := fmt.Sprintf("r%d-c%d-%d", round, c, i)
					spec := scheduler.JobSpec{Name: key, Team: "nlp", Queue: scheduler.PoolDev, GPUs: 1, Card: "L40S-48GB"}
					o := &submitOutcome{spec: spec}
					mu.Lock()
					outcomes[key] = o
					mu.Unlock()
					j, err := ch.c.SubmitOnce(t.Context(), spec, key)
					if err != nil {
						if !Retryable(err) {
							t.Errorf("submit %s: %v", key, err)
						}
						return // the scheduler is gone: this key is retried after the restart
					}
					mu.Lock()
					o.job = j.ID
					mu.Unlock()
				}
			})
		}
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond) // a random point of the submits
		if err := ch.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
	}
	ch := startChild(t, dir)
	ctx := t.Context()
	answered := 0
	for key, o := range outcomes {
		j, err := ch.c.SubmitOnce(ctx, o.spec, key)
		if err != nil {
			t.Fatalf("retry of %s after the restart: %v", key, err)
		}
		if o.job != "" {
			answered++
			if j.ID != o.job {
				t.Errorf("retry of %s returned job %s, its first answer was %s", key, j.ID, o.job)
			}
		}
		o.job = j.ID
	}
	jobs, err := ch.c.Jobs(ctx, scheduler.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string][]string{}
	for _, j := range jobs {
		byKey[j.Spec.Name] = append(byKey[j.Spec.Name], j.ID)
	}
	rows, err := ch.c.Actions(ctx, scheduler.ActionFilter{Decision: scheduler.DecSubmit})
	if err != nil {
		t.Fatal(err)
	}
	submitRows := map[string][]string{} // job → actors
	for _, a := range rows {
		submitRows[a.Job] = append(submitRows[a.Job], a.Actor) // a submit is attempt 1: the key is the job ID
	}
	for key, o := range outcomes {
		if ids := byKey[key]; !slices.Equal(ids, []string{o.job}) {
			t.Errorf("key %s: jobs %v, want exactly %s", key, ids, o.job)
		}
		if actors := submitRows[o.job]; !slices.Equal(actors, []string{"token:admin"}) {
			t.Errorf("job %s (key %s): submit rows by %v, want one by token:admin", o.job, key, actors)
		}
	}
	if len(jobs) != len(outcomes) {
		t.Errorf("%d jobs for %d keys", len(jobs), len(outcomes))
	}
	t.Logf("%d rounds killed at random points: %d submits, %d answered before a kill, %d jobs, each once with its row", rounds, len(outcomes), answered, len(jobs))
	if answered == 0 {
		t.Error("no submit was answered before a kill: the test tested nothing")
	}
}

// writeTokens writes testTokens to path, as newGuard does.
func writeTokens(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, roles := range testTokens {
		fmt.Fprintln(f, auth.TokenEntry{Name: name, Roles: roles, Hash: auth.HashToken("tok-" + name)}.String())
	}
	_ = f.Chmod(0o600)
}
