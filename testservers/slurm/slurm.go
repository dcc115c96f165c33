// Package slurm starts a real one-node Slurm cluster for tests: munged,
// slurmctld and slurmd (Debian's munge, slurmctld, slurmd and slurm-client, Slurm
// 22.05) on loopback, on ephemeral ports, with every file in the test's temporary
// directory, stopped by t.Cleanup whether the test passes or fails.
//
// The node has four fake GPUs (gres/gpu of type a100, device nodes made with
// mknod c 195 N under the temporary directory, gres.conf AutoDetect=off), so
// sbatch --gres=gpu:a100:N, scontrol show job -d (GRES IDX) and the prolog's
// SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES behave as on a GPU node. Processes are
// tracked with proctrack/cgroup (cgroup/v1 here: a task's freezer cgroup is
// /slurm_<node>/uid_0/job_<id>/step_batch); accounting is off
// (accounting_storage/none, jobcomp/none).
//
// It needs root (slurmd runs jobs as their user, and munged runs with --force).
// Where Slurm cannot be had, Start fails the test saying how to get it; with
// GPUPOOL_TEST_NO_SLURM=1 it skips instead.
package slurm

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// OptOut is the variable that turns a missing Slurm into a skip.
const OptOut = "GPUPOOL_TEST_NO_SLURM"

// GPUs is the number of fake GPUs on the node.
const GPUs = 4

// Options shape the cluster.
type Options struct {
	// Prolog and Epilog are scripts (file name → content) installed, mode 0755,
	// in <dir>/prolog.d and <dir>/epilog.d; slurm.conf then has
	// Prolog=<dir>/prolog.d/* (likewise Epilog) and PrologFlags=Alloc.
	Prolog, Epilog map[string]string
	// EmptyPrologDir sets Prolog=<dir>/prolog.d/* with no file in it.
	EmptyPrologDir bool
}

// Cluster is a running one-node cluster.
type Cluster struct {
	// Dir holds slurm.conf, the daemons' state, spool and logs.
	Dir string
	// Conf is slurm.conf's path.
	Conf string
	// Name is the cluster's name (SLURM_CLUSTER_NAME), Node the node's and
	// Partition the default partition's.
	Name, Node, Partition string
	// BinDir holds scontrol, scancel, sbatch, squeue and sinfo wrappers that
	// use this cluster's slurm.conf.
	BinDir string

	t     testing.TB
	procs []*exec.Cmd
}

var needs = []string{"munged", "slurmctld", "slurmd", "scontrol", "scancel", "sbatch", "squeue", "sinfo"}

// lookPath finds a program on PATH or in the sbin directories, which a
// non-login root shell may lack.
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH or in /usr/sbin", name)
}

// unavailable fails (or, with GPUPOOL_TEST_NO_SLURM=1, skips) the test.
func unavailable(t testing.TB, why string) {
	t.Helper()
	msg := "real Slurm unavailable: " + why + ` (run "make deps" as root, which installs Debian's slurmctld, slurmd, slurm-client and munge; or set ` + OptOut + "=1 to skip the tests that need it)"
	if os.Getenv(OptOut) == "1" {
		t.Skip(msg)
	}
	t.Fatal(msg)
}

// Start starts a cluster and registers its stop with t.Cleanup.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	bins := map[string]string{}
	for _, n := range needs {
		p, err := lookPath(n)
		if err != nil {
			unavailable(t, err.Error())
		}
		bins[n] = p
	}
	if os.Geteuid() != 0 {
		unavailable(t, "slurmd must run as root")
	}
	reapStale()
	dir := t.TempDir()
	// Distinct names and job IDs: clusters of test packages that run at the same
	// time share the host's cgroup tree (/slurm_<node>/uid_0/job_<id>).
	tag := fmt.Sprintf("%06d", rand.IntN(1_000_000))
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Name: "gpt" + tag, Node: "gpu" + tag, Partition: "gpu",
		BinDir: filepath.Join(dir, "bin"), t: t}
	t.Cleanup(c.stop)
	for _, d := range []string{"state", "spool", "dev", "prolog.d", "epilog.d", "bin", "munge"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for i := range GPUs {
		p := filepath.Join(dir, "dev", fmt.Sprintf("nvidia%d", i))
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, int(mkdev(195, uint32(i)))); err != nil {
			unavailable(t, fmt.Sprintf("mknod %s: %v", p, err))
		}
	}
	key := bytes.Repeat([]byte{0}, 1024)
	for i := range key {
		key[i] = byte(rand.IntN(256))
	}
	mustWrite(t, filepath.Join(dir, "munge", "munge.key"), key, 0o400)
	for name, body := range opts.Prolog {
		mustWrite(t, filepath.Join(dir, "prolog.d", name), []byte(body), 0o755)
	}
	for name, body := range opts.Epilog {
		mustWrite(t, filepath.Join(dir, "epilog.d", name), []byte(body), 0o755)
	}
	ports := freePorts(t, 2)
	mustWrite(t, c.Conf, []byte(c.slurmConf(ports[0], ports[1], opts)), 0o644)
	mustWrite(t, filepath.Join(dir, "gres.conf"), []byte(fmt.Sprintf("AutoDetect=off\nNodeName=%s Name=gpu Type=a100 File=%s/dev/nvidia[0-%d]\n", c.Node, dir, GPUs-1)), 0o644)
	// cgroup/v1 where the host mounts it (this sandbox's hybrid hierarchy);
	// autodetect elsewhere.
	cg := "CgroupAutomount=no\n"
	if _, err := os.Stat("/sys/fs/cgroup/freezer"); err == nil {
		cg += "CgroupPlugin=cgroup/v1\n"
	}
	mustWrite(t, filepath.Join(dir, "cgroup.conf"), []byte(cg), 0o644)
	for _, n := range []string{"scontrol", "scancel", "sbatch", "squeue", "sinfo"} {
		writeWrapper(t, filepath.Join(c.BinDir, n), c.Conf, bins[n])
	}

	m := filepath.Join(dir, "munge")
	c.spawn(bins["munged"], "-F", "--force", "--socket="+filepath.Join(m, "munge.socket"), "--key-file="+filepath.Join(m, "munge.key"),
		"--pid-file="+filepath.Join(m, "munged.pid"), "--seed-file="+filepath.Join(m, "munge.seed"), "--log-file="+filepath.Join(m, "munged.log"))
	c.waitFor("munged's socket", func() bool { _, err := os.Stat(filepath.Join(m, "munge.socket")); return err == nil })
	c.spawn(bins["slurmctld"], "-D", "-i", "-f", c.Conf)
	c.spawn(bins["slurmd"], "-D", "-N", c.Node, "-f", c.Conf)
	c.waitFor("the node to register idle", func() bool {
		out, err := c.Cmd(context.Background(), "sinfo", "-h", "-n", c.Node, "-o", "%t").Output()
		return err == nil && strings.TrimSpace(string(out)) == "idle"
	})
	return c
}

func (c *Cluster) slurmConf(ctld, slurmd int, opts Options) string {
	d := c.Dir
	var b strings.Builder
	fmt.Fprintf(&b, `ClusterName=%s
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=%d
SlurmdPort=%d
AuthType=auth/munge
AuthInfo=socket=%s/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd.pid
SlurmctldLogFile=%s/slurmctld.log
SlurmdLogFile=%s/slurmd.log
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
ProctrackType=proctrack/cgroup
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
KillWait=2
FirstJobId=%d
`, c.Name, ctld, slurmd, d, d, d, d, d, d, d, 1000+rand.IntN(900_000))
	if len(opts.Prolog) > 0 || opts.EmptyPrologDir {
		fmt.Fprintf(&b, "Prolog=%s/prolog.d/*\n", d)
	}
	if len(opts.Epilog) > 0 {
		fmt.Fprintf(&b, "Epilog=%s/epilog.d/*\n", d)
	}
	b.WriteString("PrologFlags=Alloc\n")
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 CPUs=%d RealMemory=1000 Gres=gpu:a100:%d State=UNKNOWN\n", c.Node, host, 2*GPUs, GPUs)
	fmt.Fprintf(&b, "PartitionName=%s Nodes=%s Default=YES MaxTime=INFINITE State=UP\n", c.Partition, c.Node)
	return b.String()
}

// T returns the cluster with its helpers failing t (a subtest) rather than the
// test that started it.
func (c *Cluster) T(t testing.TB) *Cluster {
	cc := *c
	cc.t = t
	return &cc
}

// Bin returns the path of a wrapper (scontrol, scancel, sbatch, squeue, sinfo)
// that runs the command against this cluster.
func (c *Cluster) Bin(name string) string { return filepath.Join(c.BinDir, name) }

// Cmd returns a command for this cluster.
func (c *Cluster) Cmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, c.Bin(name), args...)
}

// Run runs a command and returns its stdout, failing the test if it fails.
func (c *Cluster) Run(name string, args ...string) string {
	c.t.Helper()
	var stderr bytes.Buffer
	cmd := c.Cmd(c.t.Context(), name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("%s %s: %v: %s\n%s", name, strings.Join(args, " "), err, stderr.String(), c.Logs())
	}
	return string(out)
}

// Submit submits a batch job (sbatch --parsable with args) and returns its ID.
func (c *Cluster) Submit(args ...string) string {
	c.t.Helper()
	out := c.Run("sbatch", append([]string{"--parsable", "--output=" + filepath.Join(c.Dir, "job-%j.out")}, args...)...)
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	return id
}

var jobStateField = regexp.MustCompile(`(?:^|\s)JobState=(\S+)`)

// Field returns one field of scontrol --oneliner show job.
func (c *Cluster) Field(id, field string) string {
	c.t.Helper()
	out := c.Run("scontrol", "--oneliner", "show", "job", "-d", id)
	m := regexp.MustCompile(`(?:^|\s)` + regexp.QuoteMeta(field) + `=(\S*)`).FindStringSubmatch(out)
	if m == nil {
		c.t.Fatalf("no %s= in scontrol show job %s: %s", field, id, out)
	}
	return m[1]
}

// WaitState waits until the job's JobState is one of states, and returns it;
// after a minute it fails the test. A requeued job stays COMPLETING while its
// processes end and the epilog runs, and is PENDING after.
func (c *Cluster) WaitState(id string, states ...string) string {
	c.t.Helper()
	var last, record string
	if !c.Poll(func() bool {
		out, err := c.Cmd(c.t.Context(), "scontrol", "--oneliner", "show", "job", id).Output()
		if m := jobStateField.FindSubmatch(out); err == nil && m != nil {
			last, record = string(m[1]), string(out)
			return slices.Contains(states, last)
		}
		return false
	}) {
		c.t.Fatalf("job %s not %s after a minute: %s\n%s", id, strings.Join(states, " or "), record, c.Logs())
	}
	return last
}

// Unreachable returns a directory of scontrol and scancel wrappers whose
// slurm.conf names a port no controller listens on, with the given
// MessageTimeout (seconds; 0 keeps Slurm's default, 10, under which every
// command gives up after about 18 s).
func (c *Cluster) Unreachable(messageTimeout int) string {
	c.t.Helper()
	b, err := os.ReadFile(c.Conf)
	if err != nil {
		c.t.Fatal(err)
	}
	port := freePorts(c.t, 1)[0]
	conf := regexp.MustCompile(`(?m)^SlurmctldPort=\d+$`).ReplaceAllString(string(b), fmt.Sprintf("SlurmctldPort=%d", port))
	if messageTimeout > 0 {
		conf += fmt.Sprintf("MessageTimeout=%d\n", messageTimeout)
	}
	dir, err := os.MkdirTemp(c.Dir, "down")
	if err != nil {
		c.t.Fatal(err)
	}
	p := filepath.Join(dir, "slurm.conf")
	mustWrite(c.t, p, []byte(conf), 0o644)
	for _, n := range []string{"scontrol", "scancel"} {
		bin, _ := lookPath(n)
		writeWrapper(c.t, filepath.Join(dir, n), p, bin)
	}
	return dir
}

// Logs returns the tails of slurmctld's and slurmd's logs, for failure messages.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, f := range []string{"slurmctld.log", "slurmd.log"} {
		data, _ := os.ReadFile(filepath.Join(c.Dir, f))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		lines = lines[max(0, len(lines)-15):]
		fmt.Fprintf(&b, "--- %s (last lines)\n%s\n", f, strings.Join(lines, "\n"))
	}
	return b.String()
}

func (c *Cluster) spawn(bin string, args ...string) {
	c.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	out, err := os.Create(filepath.Join(c.Dir, filepath.Base(bin)+".stderr"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	// Killed with the test binary, should it die before its cleanups run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start %s: %v", bin, err)
	}
	c.procs = append(c.procs, cmd)
}

// waitFor polls cond until it holds; after a minute, or when a daemon has
// exited, it fails the test with the logs.
func (c *Cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	if !c.Poll(cond) {
		c.t.Fatalf("waiting for %s: not after a minute, or a daemon exited\n%s", what, c.Logs())
	}
}

// Poll calls cond every 50 ms until it holds (true), or a minute has passed, the
// test's context has ended or a daemon has exited (false).
func (c *Cluster) Poll(cond func() bool) bool {
	ctx, cancel := context.WithTimeout(c.t.Context(), time.Minute)
	defer cancel()
	for !cond() {
		for _, p := range c.procs {
			if syscall.Kill(p.Process.Pid, 0) != nil {
				return false
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// stop cancels the cluster's jobs, waits (up to 15 s) for their steps to end, and
// stops the daemons, newest first.
func (c *Cluster) stop() {
	if len(c.procs) == 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = c.Cmd(ctx, "scancel", "--user=root").Run()
		for ctx.Err() == nil {
			out, err := c.Cmd(ctx, "squeue", "-h", "-o", "%i").Output()
			if err != nil || len(bytes.TrimSpace(out)) == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	// slurmd leaves its node's (empty) cgroups behind.
	for _, ctl := range []string{"freezer", "cpuset", "memory", "devices"} {
		removeTree(filepath.Join("/sys/fs/cgroup", ctl, "slurm_"+c.Node))
	}
}

// staleNode is the cgroup directory of a test cluster's node: slurm_gpu<6 digits>.
var staleNode = regexp.MustCompile(`^slurm_(gpu[0-9]{6})$`)

// reapStale ends what a test binary killed before its cleanups ran (a go test
// timeout) left behind: its daemons die with it, but the slurmstepd of its jobs
// do not. For each test node's freezer cgroup whose slurmd is gone, the
// processes in it are killed and the cgroups removed.
func reapStale() {
	const root = "/sys/fs/cgroup/freezer"
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	live := map[string]bool{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if filepath.Base(args[0]) != "slurmd" {
			continue
		}
		for i, a := range args[:len(args)-1] {
			if a == "-N" {
				live[args[i+1]] = true
			}
		}
	}
	for _, e := range ents {
		m := staleNode.FindStringSubmatch(e.Name())
		if m == nil || live[m[1]] {
			continue
		}
		dir := filepath.Join(root, e.Name())
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == "cgroup.procs" {
				b, _ := os.ReadFile(p)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			return nil
		})
		time.Sleep(100 * time.Millisecond)
		removeTree(dir)
	}
}

// removeTree removes a cgroup directory tree, deepest first (cgroupfs allows
// only rmdir).
func removeTree(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() {
			removeTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = syscall.Rmdir(dir)
}

func writeWrapper(t testing.TB, path, conf, bin string) {
	t.Helper()
	mustWrite(t, path, []byte(fmt.Sprintf("#!/bin/sh\nSLURM_CONF='%s' exec '%s' \"$@\"\n", conf, bin)), 0o755)
}

func mustWrite(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// freePorts returns n loopback TCP ports free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// mkdev is Linux's makedev.
func mkdev(major, minor uint32) uint64 {
	return uint64(major&0xfff)<<8 | uint64(minor&0xff) | uint64(minor&^0xff)<<12 | uint64(major&^0xfff)<<32
}
