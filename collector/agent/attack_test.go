package agent

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/bus/agentwire"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/collector/attribution"
)

// Recorded cgroup files (collector/attribution/testdata/proc): two pods of two
// teams, and their job keys without a kubelet.
const (
	podA    = "1001" // kubepods-burstable-pod8d2f3e1a_…
	podB    = "1002" // kubepods-besteffort-pod3b7e9c2d_…
	podAJob = "k8s/_/8d2f3e1a-7b4c-4e5f-9a0b-1c2d3e4f5a6b"
	podBJob = "k8s/_/3b7e9c2d-1f4a-4d6b-8e2c-5a9f0b1c7d3e"
)

// fakeProc is a procfs tree for attribution in which real child processes of the
// test carry recorded cgroup files and a chosen environment.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T) *fakeProc {
	t.Helper()
	root := t.TempDir()
	stat, err := os.ReadFile(filepath.Join("..", "attribution", "testdata", "proc", "stat"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "stat"), stat, 0o600); err != nil {
		t.Fatal(err)
	}
	return &fakeProc{t: t, root: root}
}

// add gives pid the cgroup file of the recorded process rec and the environment env.
func (p *fakeProc) add(pid uint32, rec string, env ...string) {
	p.t.Helper()
	src := filepath.Join("..", "attribution", "testdata", "proc", rec)
	dir := filepath.Join(p.root, strconv.Itoa(int(pid)))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		p.t.Fatal(err)
	}
	cg, err := os.ReadFile(filepath.Join(src, "cgroup"))
	if err != nil {
		p.t.Fatal(err)
	}
	stat, err := os.ReadFile(filepath.Join(src, "stat"))
	if err != nil {
		p.t.Fatal(err)
	}
	stat = []byte(strconv.Itoa(int(pid)) + string(stat[len(rec):]))
	environ := strings.Join(append([]string{"PATH=/usr/bin"}, env...), "\x00") + "\x00"
	for name, data := range map[string][]byte{"cgroup": cg, "stat": stat, "environ": []byte(environ)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			p.t.Fatal(err)
		}
	}
}

func (p *fakeProc) attributor() *attribution.Attributor {
	p.t.Helper()
	cfg := attribution.DefaultConfig()
	cfg.ProcRoot, cfg.Cluster, cfg.Node = p.root, "c1", "node-a"
	a, err := attribution.New(cfg)
	if err != nil {
		p.t.Fatal(err)
	}
	return a
}

// TestAttackAgentChecksPIDOwnership: a signed command that names a PID of
// another job, a job of a protected pool, or the wrong pool is refused with its
// reason and signals nothing; the PID's job and pool are read afresh from its
// cgroup (recorded cgroup files) and environment, not taken from the command or
// the last sample.
func TestAttackAgentChecksPIDOwnership(t *testing.T) {
	reused, reusedGone := child(t, "exec sleep 30")     // the sample says pod A; its cgroup says pod B
	prod, prodGone := child(t, "exec sleep 30")         // pod B, pool prod (protected)
	inference, infGone := child(t, "exec sleep 30")     // pod B, pool inference (not protected)
	training, trainingGone := child(t, "exec sleep 30") // pod A, pool training
	proc := newFakeProc(t)
	proc.add(reused, podB)
	proc.add(prod, podB, "GPUPOOL_POOL=prod")
	proc.add(inference, podB, "GPUPOOL_POOL=inference")
	proc.add(training, podA, "GPUPOOL_POOL=training")
	view := &fakeView{pids: map[uint32]string{reused: podAJob, prod: podBJob, inference: podBJob, training: podAJob}}
	key, pub := keyPair(t)
	b := bustest.Start(t)
	cfg := DefaultConfig()
	cfg.Cluster, cfg.Node, cfg.PublicKeyFile, cfg.StateDir = "c1", "node-a", pub, t.TempDir()
	cfg.ProtectedPools = []string{"prod"}
	run(t, b, cfg, view, nil, WithAttributor(proc.attributor()))

	for _, tc := range []struct {
		name string
		cmd  agentwire.Command
		want string
	}{
		{"PID reused by another team's pod since the sample", agentwire.Command{ID: "o1", Action: agentwire.ActionKill, PID: reused, Job: podAJob},
			`belongs to job "` + podBJob + `" now (its cgroup), not "` + podAJob + `"`},
		{"no job named, the PID's job in a protected pool", agentwire.Command{ID: "o2", Action: agentwire.ActionKill, PID: prod},
			`its job "` + podBJob + `" is in pool "prod", protected on this node`},
		{"the right job, in a protected pool", agentwire.Command{ID: "o3", Action: agentwire.ActionKill, PID: prod, Job: podBJob, Pool: "dev"},
			`is in pool "prod", protected on this node`},
		{"the command names a protected pool", agentwire.Command{ID: "o4", Action: agentwire.ActionKill, PID: training, Job: podAJob, Pool: "prod"},
			`the command's pool "prod" is protected on this node`},
		{"the command names another pool than the node knows", agentwire.Command{ID: "o5", Action: agentwire.ActionKill, PID: inference, Job: podBJob, Pool: "dev"},
			`is in pool "inference" on this node, the command says "dev"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := send(t, b, tc.cmd, key)
			if res.Outcome != agentwire.OutcomeRefused || !strings.Contains(res.Error, tc.want) {
				t.Fatalf("got %+v, want refused mentioning %q", res, tc.want)
			}
		})
	}
	for name, gone := range map[string]<-chan struct{}{"reused": reusedGone, "prod": prodGone, "inference": infGone} {
		select {
		case <-gone:
			t.Errorf("a refused command signalled the %s process", name)
		default:
		}
	}
	// The command naming the PID's own job and pool is carried out.
	if res := send(t, b, agentwire.Command{ID: "o6", Action: agentwire.ActionKill, PID: training, Job: podAJob, Pool: "training"}, key); res.Outcome != agentwire.OutcomeKilled {
		t.Fatalf("the PID's own job and pool: %+v, want killed", res)
	}
	<-trainingGone
}

// TestAttackReplayAfterRestart: a real agent on the embedded NATS server carries
// out a signed command, stops, and a new agent on the same state_dir (a restarted
// collector) refuses the very same signed bytes as replayed, within max_skew.
func TestAttackReplayAfterRestart(t *testing.T) {
	pid, gone := child(t, "exec sleep 30")
	view := &fakeView{pids: map[uint32]string{pid: "job-a"}}
	key, pub := keyPair(t)
	b := bustest.Start(t)
	cfg := DefaultConfig()
	cfg.Cluster, cfg.Node, cfg.PublicKeyFile, cfg.StateDir = "c1", "node-a", pub, filepath.Join(t.TempDir(), "agent")
	data, err := agentwire.Seal(agentwire.Command{ID: "restart-1", Cluster: "c1", Node: "node-a", Action: agentwire.ActionKill, PID: pid, Job: "job-a", IssuedAt: time.Now()}, key)
	if err != nil {
		t.Fatal(err)
	}

	first, err := New(cfg, b.Conn, view)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	<-first.Listening()
	if res := request(t, b, data); res.Outcome != agentwire.OutcomeKilled {
		t.Fatalf("first delivery: %+v, want killed", res)
	}
	<-gone
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// The sample still names the PID (a process that took its number would be
	// signalled): only the record on disk refuses the replay.
	run(t, b, cfg, view, nil)
	res := request(t, b, data)
	if res.Outcome != agentwire.OutcomeRefused || !strings.Contains(res.Error, "replayed") {
		t.Fatalf("replay after a restart: %+v, want refused as replayed", res)
	}
	// The record is the agent's alone.
	for _, p := range []string{cfg.StateDir, filepath.Join(cfg.StateDir, nonceFile)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want no group or other bits", p, fi.Mode().Perm())
		}
	}
}

// TestStateDirTightened: a state_dir left open to others is restricted at start,
// and the record survives a restart only while its commands are fresh.
func TestStateDirTightened(t *testing.T) {
	_, pub := keyPair(t)
	dir := filepath.Join(t.TempDir(), "agent")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	now := time.Now()
	old := `{"nonce":"old","id":"a","issued_ms":` + strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10) + "}\n"
	fresh := `{"nonce":"fresh","id":"b","issued_ms":` + strconv.FormatInt(now.UnixMilli(), 10) + "}\n"
	if err := os.WriteFile(filepath.Join(dir, nonceFile), []byte(old+"not json\n"+fresh+`{"nonce":"cut`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Cluster, cfg.Node, cfg.PublicKeyFile, cfg.StateDir = "c1", "node-a", pub, dir
	a, err := New(cfg, nil, &fakeView{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.closeState()
	if _, ok := a.nonces["fresh"]; !ok || len(a.nonces) != 1 {
		t.Errorf("nonces after a restart: %v, want the fresh one alone", a.nonces)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want no group or other bits", p, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
