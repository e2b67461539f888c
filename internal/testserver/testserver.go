// Package testserver starts real rolisd processes on loopback for tests.
//
// It builds nothing: it runs the binary at $ROLISD_BIN or <repo>/bin/rolisd
// (`make build` puts it there) and fails the test when it is absent. Each
// member gets ephemeral ports for its client, admin, metrics and (in a
// replicated cluster) replication addresses, its output goes to a log file
// in a temporary folder (printed when the test fails), and it can be stopped
// with SIGTERM, killed with SIGKILL, paused with SIGSTOP, resumed and
// restarted on the same ports.
//
//	c := testserver.Start(t, testserver.Options{})           // one standalone node
//	c := testserver.Start(t, testserver.Options{Members: 3}) // --id=N --peers=1=...,2=...,3=...
package testserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Options configures a cluster of rolisd processes.
type Options struct {
	// Members is the number of processes; 0 means 1. With one member the
	// node is standalone (no --id or --peers) unless Replicated is set.
	Members    int
	Replicated bool
	// Args are extra flags for every member; MemberArgs adds flags per member id.
	Args       []string
	MemberArgs func(id int) []string
	// Env is added to the environment of the processes.
	Env []string
	// Binary overrides the rolisd path.
	Binary string
	// StartTimeout bounds the wait for a member to become ready; 0 means 30s.
	StartTimeout time.Duration
	// ProbeTLS is the TLS configuration used by the readiness probe when the
	// members serve TLS (a client certificate in it is needed under mTLS).
	ProbeTLS *tls.Config
	// NoWait starts the processes without waiting for them to be ready.
	NoWait bool
	// Initial, if set (1 ≤ Initial < Members), makes a cluster that will
	// grow by membership changes: members 1..Initial start with --peers
	// listing only them; members above it are not started by Start (start
	// them with Restart) and their --peers list every member (the
	// membership they are added to, themselves included).
	Initial int
}

// Cluster is a set of rolisd processes started by Start.
type Cluster struct {
	tb      testing.TB
	opts    Options
	logDir  string
	Members []*Member
}

// Member is one rolisd process. Its addresses stay the same across restarts.
type Member struct {
	ID          int
	ClientAddr  string
	AdminAddr   string
	MetricsAddr string
	ReplAddr    string // empty for a standalone node
	LogPath     string

	c    *Cluster
	args []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	state   *os.ProcessState
	paused  bool
	starts  int
	logFile *os.File
}

// RepoRoot returns the root of the repository (the folder of go.mod),
// found from the working directory upwards.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/rolisdb/rolis\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testserver: go.mod of github.com/rolisdb/rolis not found above the working directory")
		}
		dir = parent
	}
}

// Binary returns the path of rolisd: $ROLISD_BIN, else <repo>/bin/rolisd.
func Binary() (string, error) {
	p := os.Getenv("ROLISD_BIN")
	if p == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		p = filepath.Join(root, "bin", "rolisd")
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("testserver: rolisd binary not found at %s (build it with `make build`, or set ROLISD_BIN): %w", p, err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("testserver: %s is not an executable file", p)
	}
	return p, nil
}

// FreePorts picks n distinct loopback ports that are free now. They come
// from below the kernel's range for outgoing connections: a port from that
// range (asked for as port 0) can be handed to some process's outgoing
// connection, between this call and the member's bind, or while a killed
// member is down and about to restart on its ports. A process that takes
// one first anyway makes the start fail, and Start tries again with new
// ports.
func FreePorts(n int) ([]int, error) {
	high := ephemeralLow()
	low := max(1024, high-16384)
	ports := make([]int, 0, n)
	seen := map[int]bool{}
	for tries := 0; len(ports) < n && tries < 1000; tries++ {
		p := low + rand.IntN(high-low)
		if seen[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		seen[p] = true
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("testserver: found %d of %d free loopback ports below %d", len(ports), n, high)
	}
	return ports, nil
}

// ephemeralLow is the first port of the kernel's range for outgoing
// connections (Linux's default when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 1024 {
				return v
			}
		}
	}
	return 32768
}

// Start starts the cluster and waits until every member is ready (unless
// opts.NoWait). The processes are stopped when the test ends; if the test
// failed, the tail of each log is printed.
func Start(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	c, err := start(tb, opts)
	if err != nil {
		tb.Fatalf("testserver: %v", err)
	}
	return c
}

func start(tb testing.TB, opts Options) (*Cluster, error) {
	if opts.Members <= 0 {
		opts.Members = 1
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.Binary == "" {
		b, err := Binary()
		if err != nil {
			return nil, err
		}
		opts.Binary = b
	}
	logDir := os.Getenv("ROLIS_TEST_LOGS")
	if logDir != "" {
		logDir = filepath.Join(logDir, strings.NewReplacer("/", "_", " ", "_").Replace(tb.Name()))
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			return nil, err
		}
	} else {
		logDir = tb.TempDir()
	}
	c := &Cluster{tb: tb, opts: opts, logDir: logDir}
	tb.Cleanup(c.cleanup)

	const attempts = 3
	var err error
	for attempt := 0; attempt < attempts; attempt++ {
		if err = c.assign(); err != nil {
			return nil, err
		}
		for _, m := range c.Members {
			if c.spare(m.ID) {
				continue
			}
			if err = m.launch(); err != nil {
				break
			}
		}
		if err == nil && !opts.NoWait {
			err = c.WaitReady(opts.StartTimeout)
		}
		if err == nil {
			return c, nil
		}
		portClash := false
		for _, m := range c.Members {
			if m.Running() {
				m.Kill()
			}
			if m.logContains("address already in use", "Address already in use", "Failed to add", "bind") {
				portClash = true
			}
			m.mu.Lock()
			if m.logFile != nil {
				m.logFile.Close()
				m.logFile = nil
			}
			m.mu.Unlock()
		}
		if !portClash {
			break
		}
		tb.Logf("testserver: port clash, trying again with new ports: %v", err)
	}
	return nil, err
}

// assign gives every member fresh ports and its command line.
func (c *Cluster) assign() error {
	n := c.opts.Members
	replicated := n > 1 || c.opts.Replicated
	per := 3
	if replicated {
		per = 5 // + replication and accept stream ports
	}
	ports, err := FreePorts(n * per)
	if err != nil {
		return err
	}
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	c.Members = make([]*Member, n)
	var peers []string
	for i := range n {
		m := &Member{ID: i + 1, c: c, ClientAddr: addr(ports[i*per]), AdminAddr: addr(ports[i*per+1]),
			MetricsAddr: addr(ports[i*per+2])}
		if replicated {
			m.ReplAddr = addr(ports[i*per+3])
			peers = append(peers, fmt.Sprintf("%d=%s", m.ID, m.ReplAddr))
		}
		m.LogPath = filepath.Join(c.logDir, fmt.Sprintf("rolisd-%d.log", m.ID))
		c.Members[i] = m
	}
	for _, m := range c.Members {
		m.args = []string{"--listen=" + m.ClientAddr, "--admin-listen=" + m.AdminAddr, "--metrics-listen=" + m.MetricsAddr}
		if replicated {
			p := peers
			if c.opts.Initial > 0 && !c.spare(m.ID) {
				p = peers[:c.opts.Initial]
			}
			m.args = append(m.args, fmt.Sprintf("--id=%d", m.ID), "--peers="+strings.Join(p, ","))
		}
		extra := append([]string{}, c.opts.Args...)
		if c.opts.MemberArgs != nil {
			extra = append(extra, c.opts.MemberArgs(m.ID)...)
		}
		// A fixed accept stream port, unless the test sets one: left to the
		// kernel (0), it could take a port reserved here for another member.
		if replicated && !hasFlag(extra, "--accept-stream-port") {
			m.args = append(m.args, "--accept-stream-port="+strconv.Itoa(ports[(m.ID-1)*per+4]))
		}
		m.args = append(m.args, extra...)
	}
	return nil
}

// spare reports whether member id is left for a membership change (Initial).
func (c *Cluster) spare(id int) bool { return c.opts.Initial > 0 && id > c.opts.Initial }

// SetProbeTLS replaces Options.ProbeTLS for the probes from now on (a test
// that moves a running cluster from plaintext to TLS).
func (c *Cluster) SetProbeTLS(cfg *tls.Config) { c.opts.ProbeTLS = cfg }

// Member returns the member with the given id (1-based).
func (c *Cluster) Member(id int) *Member { return c.Members[id-1] }

// ClientAddrs returns the client addresses of all members.
func (c *Cluster) ClientAddrs() []string {
	return c.collect(func(m *Member) string { return m.ClientAddr })
}

// AdminAddrs returns the admin addresses of all members.
func (c *Cluster) AdminAddrs() []string {
	return c.collect(func(m *Member) string { return m.AdminAddr })
}

func (c *Cluster) collect(f func(*Member) string) []string {
	out := make([]string, len(c.Members))
	for i, m := range c.Members {
		out[i] = f(m)
	}
	return out
}

// LogDir returns the folder of the members' logs.
func (c *Cluster) LogDir() string { return c.logDir }

// WaitReady waits until every running member is ready.
func (c *Cluster) WaitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(c.Members))
	for i, m := range c.Members {
		m.mu.Lock()
		started := m.cmd != nil
		m.mu.Unlock()
		if !started {
			continue // a spare not started yet (Initial)
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = m.WaitReady(ctx) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Cluster) cleanup() {
	for _, m := range c.Members {
		if m.Running() {
			m.Stop(10 * time.Second)
		}
		m.mu.Lock()
		if m.logFile != nil {
			m.logFile.Close()
			m.logFile = nil
		}
		m.mu.Unlock()
	}
	if c.tb.Failed() {
		for _, m := range c.Members {
			c.tb.Logf("---- tail of %s ----\n%s", m.LogPath, m.LogTail(60))
		}
	}
}

// Args returns the command line flags of the member.
func (m *Member) Args() []string { return append([]string(nil), m.args...) }

// SetArgs replaces the flags used at the next (re)start.
func (m *Member) SetArgs(args []string) { m.args = append([]string(nil), args...) }

func (m *Member) launch() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil && m.state == nil {
		return fmt.Errorf("member %d is already running", m.ID)
	}
	if m.logFile == nil {
		f, err := os.OpenFile(m.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		m.logFile = f
	}
	m.starts++
	fmt.Fprintf(m.logFile, "==== testserver: start %d of member %d at %s: %s %s\n", m.starts, m.ID,
		time.Now().Format(time.RFC3339Nano), m.c.opts.Binary, strings.Join(m.args, " "))
	cmd := exec.Command(m.c.opts.Binary, m.args...)
	cmd.Stdout, cmd.Stderr = m.logFile, m.logFile
	cmd.Env = append(os.Environ(), m.c.opts.Env...)
	// Own process group (a ^C of the test does not reach it first) and
	// killed if the test process dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting member %d: %w", m.ID, err)
	}
	m.cmd, m.state, m.paused = cmd, nil, false
	exited := make(chan struct{})
	m.exited = exited
	go func() {
		cmd.Wait()
		m.mu.Lock()
		m.state = cmd.ProcessState
		m.mu.Unlock()
		close(exited)
	}()
	return nil
}

// Restart starts the member again after it exited, on the same ports, and
// waits until it is ready.
func (m *Member) Restart(timeout time.Duration) error {
	if err := m.launch(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return m.WaitReady(ctx)
}

// Running reports whether the process is alive (paused counts as alive).
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil && m.state == nil
}

// Pid returns the process id, or 0.
func (m *Member) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Signal sends sig to the process.
func (m *Member) Signal(sig syscall.Signal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || m.state != nil {
		return fmt.Errorf("member %d is not running", m.ID)
	}
	switch sig {
	case syscall.SIGSTOP:
		m.paused = true
	case syscall.SIGCONT:
		m.paused = false
	}
	return m.cmd.Process.Signal(sig)
}

// Pause stops the process with SIGSTOP and returns once every thread of it
// is stopped; Resume continues it.
func (m *Member) Pause() error {
	if err := m.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for !m.allThreadsStopped() {
		if time.Now().After(deadline) {
			return fmt.Errorf("member %d: not stopped 5s after SIGSTOP", m.ID)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

func (m *Member) Resume() error { return m.Signal(syscall.SIGCONT) }

// allThreadsStopped reads the state of every thread in /proc (Linux).
func (m *Member) allThreadsStopped() bool {
	dir := fmt.Sprintf("/proc/%d/task", m.Pid())
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return true // not Linux, or gone: nothing more to wait for
	}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) STATE ...: comm may hold spaces; the state follows the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		if st := b[i+2]; st != 'T' && st != 't' {
			return false
		}
	}
	return true
}

// Wait waits up to timeout for the process to exit and returns its state.
func (m *Member) Wait(timeout time.Duration) (*os.ProcessState, error) {
	m.mu.Lock()
	exited := m.exited
	m.mu.Unlock()
	if exited == nil {
		return nil, fmt.Errorf("member %d was never started", m.ID)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-exited:
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.state, nil
	case <-t.C:
		return nil, fmt.Errorf("member %d still running after %v", m.ID, timeout)
	}
}

// Exited returns a channel closed when the current process exits.
func (m *Member) Exited() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exited
}

// Stop sends SIGTERM (resuming a paused process first), waits up to grace,
// then kills it. It returns the exit state.
func (m *Member) Stop(grace time.Duration) (*os.ProcessState, error) {
	m.mu.Lock()
	paused := m.paused
	m.mu.Unlock()
	if paused {
		m.Resume()
	}
	if err := m.Signal(syscall.SIGTERM); err != nil {
		return m.Wait(0)
	}
	if st, err := m.Wait(grace); err == nil {
		return st, nil
	}
	m.Kill()
	return m.Wait(10 * time.Second)
}

// Kill sends SIGKILL and waits for the exit.
func (m *Member) Kill() (*os.ProcessState, error) {
	if err := m.Signal(syscall.SIGKILL); err != nil {
		return m.Wait(0)
	}
	return m.Wait(10 * time.Second)
}

// WaitReady waits until the member serves: the gRPC health service of its
// client and admin ports answers SERVING and /healthz of its metrics port
// answers 200. It fails early if the process exits.
func (m *Member) WaitReady(ctx context.Context) error {
	var last error
	for {
		m.mu.Lock()
		exited := m.exited
		m.mu.Unlock()
		select {
		case <-exited:
			st, _ := m.Wait(0)
			return fmt.Errorf("member %d exited during start (%v); log %s:\n%s", m.ID, st, m.LogPath, m.LogTail(20))
		default:
		}
		if last = m.probe(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("member %d not ready: %w (last probe: %v); log %s:\n%s", m.ID, ctx.Err(), last, m.LogPath, m.LogTail(20))
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func (m *Member) probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for _, addr := range []string{m.ClientAddr, m.AdminAddr} {
		if err := HealthCheck(pctx, addr, m.c.opts.ProbeTLS); err != nil {
			return err
		}
	}
	code, _, err := m.MetricsGet(pctx, "/healthz")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s/healthz: HTTP %d", m.MetricsAddr, code)
	}
	return nil
}

// HealthCheck asks the gRPC health service at addr about the server as a
// whole ("") and fails unless it is SERVING.
func HealthCheck(ctx context.Context, addr string, tlsCfg *tls.Config) error {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer cc.Close()
	r, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(false))
	if status.Code(err) == codes.Unimplemented {
		return nil // no health service: answering at all is enough
	}
	if err != nil {
		return fmt.Errorf("%s health: %w", addr, err)
	}
	if r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("%s health: %v", addr, r.GetStatus())
	}
	return nil
}

// MetricsTLS says whether the member serves its metrics port over HTTPS:
// with --tls-cert unless --metrics-tls=off (rolisd's --metrics-tls=auto).
func (m *Member) MetricsTLS() bool {
	cert, mode := false, "auto"
	for _, a := range m.Args() {
		if strings.HasPrefix(a, "--tls-cert=") {
			cert = true
		}
		if v, ok := strings.CutPrefix(a, "--metrics-tls="); ok {
			mode = v
		}
	}
	return mode == "on" || (mode == "auto" && cert)
}

// MetricsGet fetches path from the member's metrics port: over HTTPS,
// verified against ProbeTLS's roots (no client certificate), when the
// member serves it so; else plain HTTP.
func (m *Member) MetricsGet(ctx context.Context, path string) (int, []byte, error) {
	if !m.MetricsTLS() {
		return HTTPGet(ctx, m.MetricsAddr, path)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if m.c.opts.ProbeTLS != nil {
		cfg.RootCAs = m.c.opts.ProbeTLS.RootCAs
	}
	return HTTPSGet(ctx, m.MetricsAddr, path, cfg)
}

// HTTPGet fetches http://addr+path and returns the status code and body.
func HTTPGet(ctx context.Context, addr, path string) (int, []byte, error) {
	return httpGet(ctx, http.DefaultClient, "http://"+addr+path)
}

// HTTPSGet fetches https://addr+path with the TLS configuration cfg.
func HTTPSGet(ctx context.Context, addr, path string, cfg *tls.Config) (int, []byte, error) {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	defer c.CloseIdleConnections()
	return httpGet(ctx, c, "https://"+addr+path)
}

func httpGet(ctx context.Context, c *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Log returns the member's whole log so far.
func (m *Member) Log() string {
	b, _ := os.ReadFile(m.LogPath)
	return string(b)
}

// LogTail returns the last n lines of the log.
func (m *Member) LogTail(n int) string {
	f, err := os.Open(m.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 4*n {
			lines = lines[len(lines)-n:]
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (m *Member) logContains(subs ...string) bool {
	log := m.Log()
	for _, s := range subs {
		if strings.Contains(log, s) {
			return true
		}
	}
	return false
}

// hasFlag reports whether args set flag (as "--flag=value" or "--flag value").
func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}
