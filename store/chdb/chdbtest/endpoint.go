package chdbtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpupool/gpupool/store/chdb"
)

// NoEndpointEnv, set to 1, lets the tests that need a ClickHouse endpoint skip when
// none can be started here; without it they fail, saying how to get one.
const NoEndpointEnv = "GPUPOOL_TEST_NO_CHDB_ENDPOINT"

// endpointEnv marks a re-executed test binary as an endpoint process (see init).
const endpointEnv = "GPUPOOL_CHDBTEST_ENDPOINT"

// serveQuery opens the listeners and then runs until the process is stopped: one
// row a second from an endless table, never returned.
const serveQuery = "SYSTEM START LISTEN TCP; SYSTEM START LISTEN HTTP; " +
	"SELECT sleepEachRow(1) FROM system.numbers SETTINGS max_block_size = 1, function_sleep_max_microseconds_per_block = 0 FORMAT Null"

// startTimeout bounds one start; the endpoint answers in about a second.
const startTimeout = time.Minute

// init turns a test binary started by StartEndpoint into the endpoint: it serves
// until its parent closes its standard input or dies, and never runs the tests.
func init() {
	if os.Getenv(endpointEnv) != "1" {
		return
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	if err := chdb.RunCommandLine(LibPath(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(1) // the serving query ended: it could not start
}

// Endpoint is a chDB process serving ClickHouse's native TCP and HTTP protocols on
// loopback ports (clickhouse-local's SYSTEM START LISTEN): a real server for the
// clickhouse-go backend without installing ClickHouse. It has no writable access
// storage (no users, grants or row policies) and no cluster.
type Endpoint struct {
	// TCPAddr is the native protocol's host:port; HTTPAddr the HTTP interface's.
	TCPAddr, HTTPAddr string
	// Version is the server's version() answer.
	Version string

	cmd   *exec.Cmd
	stdin io.Closer
	done  chan struct{}
	log   string
}

// StartEndpoint starts an endpoint on data path dir (which it owns until Stop) in a
// process of its own — a copy of the running binary — on free loopback ports, and
// returns once it answers. The process dies with its parent, so a test that fails
// or panics leaves none behind.
func StartEndpoint(ctx context.Context, dir string) (*Endpoint, error) {
	if _, err := os.Stat(LibPath()); err != nil {
		return nil, fmt.Errorf("chdbtest: endpoint: %w: %s (run \"make deps\" or set GPUPOOL_CHDB_LIB to its path)", chdb.ErrLibraryMissing, LibPath())
	}
	var err error
	// A port picked free can be taken before the endpoint binds it: try again.
	for range 3 {
		var ep *Endpoint
		if ep, err = startOnce(ctx, dir); err == nil {
			return ep, nil
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return nil, err
}

var errPortTaken = errors.New("port taken")

func startOnce(ctx context.Context, dir string) (*Endpoint, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, fmt.Errorf("chdbtest: endpoint: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("chdbtest: endpoint: %w", err)
	}
	logPath := filepath.Join(dir, "endpoint.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("chdbtest: endpoint: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe,
		"--path="+dir, "--listen_host=127.0.0.1",
		"--tcp_port="+strconv.Itoa(ports[0]), "--http_port="+strconv.Itoa(ports[1]),
		"--query="+serveQuery)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), endpointEnv+"=1", "GPUPOOL_CHDB_LIB="+LibPath())
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("chdbtest: endpoint: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("chdbtest: endpoint: start %s: %w", exe, err)
	}
	ep := &Endpoint{
		TCPAddr:  net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		HTTPAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
		cmd:      cmd, stdin: stdin, done: make(chan struct{}), log: logPath,
	}
	go func() { _ = cmd.Wait(); close(ep.done) }()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		if v, err := ep.query(ctx, "SELECT version()"); err == nil {
			ep.Version = strings.TrimSpace(v)
			return ep, nil
		}
		select {
		case <-ep.done:
			out, _ := os.ReadFile(logPath)
			msg := tail(string(out), 2000)
			if strings.Contains(msg, "Address already in use") {
				return nil, fmt.Errorf("chdbtest: endpoint: %w: %s", errPortTaken, msg)
			}
			return nil, fmt.Errorf("chdbtest: endpoint exited before answering (%s): %s", cmd.ProcessState, msg)
		case <-ctx.Done():
			ep.Stop()
			return nil, fmt.Errorf("chdbtest: endpoint on %s did not answer: %w (log %s)", ep.HTTPAddr, ctx.Err(), logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// query runs sql over the HTTP interface and returns its answer.
func (e *Endpoint) query(ctx context.Context, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.HTTPAddr+"/?query="+url.QueryEscape(sql), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	return string(b), nil
}

// Stop ends the endpoint process and waits for it: its standard input closes, and
// after ten seconds it is killed.
func (e *Endpoint) Stop() {
	_ = e.stdin.Close()
	select {
	case <-e.done:
		return
	case <-time.After(10 * time.Second):
	}
	_ = e.cmd.Process.Kill()
	<-e.done
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

var sharedEndpoint struct {
	once sync.Once
	ep   *Endpoint
	dir  string
	err  error
}

// SharedEndpoint returns the test binary's endpoint, starting it on first use on a
// temporary data path; Main stops it and removes the path.
func SharedEndpoint() (*Endpoint, error) {
	sharedEndpoint.once.Do(func() {
		sharedEndpoint.dir, sharedEndpoint.err = os.MkdirTemp("", "gpupool-chdb-endpoint-")
		if sharedEndpoint.err != nil {
			return
		}
		sharedEndpoint.ep, sharedEndpoint.err = StartEndpoint(context.Background(), sharedEndpoint.dir)
	})
	return sharedEndpoint.ep, sharedEndpoint.err
}

// stopShared stops the shared endpoint, if one started, and removes its data path.
func stopShared() {
	if sharedEndpoint.ep != nil {
		sharedEndpoint.ep.Stop()
	}
	if sharedEndpoint.dir != "" {
		_ = os.RemoveAll(sharedEndpoint.dir)
	}
}
