package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/yaml.v3"
)

// settings: where the node's pieces are. The defaults are the server image's layout; the
// integration test points them at temporary directories and loopback ports.
type settings struct {
	Java      string // JAVA (java)
	Lib       string // CASSANDRA_LIB (/opt/cassandra/lib): Cassandra's jars
	Conf      string // CASSANDRA_CONF (/config, else /etc/cassandra): what config build wrote
	Data      string // CASSANDRA_DATA (/var/lib/cassandra)
	LogDir    string // CASSANDRA_LOG_DIR (/var/log/cassandra)
	JMXPort   int    // JMX_PORT (7199), local JMX on 127.0.0.1 without authentication
	Heap      string // MAX_HEAP_SIZE (512M) unless the options set -Xmx
	ExtraOpts []string
	Version   string // the Cassandra version the image carries (5.0.9)
}

func settingsFromEnv() settings {
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	conf := env("CASSANDRA_CONF", "/config")
	if _, err := os.Stat(filepath.Join(conf, fileYaml)); err != nil && os.Getenv("CASSANDRA_CONF") == "" {
		conf = "/etc/cassandra"
	}
	jmx, _ := strconv.Atoi(env("JMX_PORT", "7199"))
	return settings{
		Java:      env("JAVA", "java"),
		Lib:       env("CASSANDRA_LIB", "/opt/cassandra/lib"),
		Conf:      conf,
		Data:      env("CASSANDRA_DATA", "/var/lib/cassandra"),
		LogDir:    env("CASSANDRA_LOG_DIR", "/var/log/cassandra"),
		JMXPort:   jmx,
		Heap:      env("MAX_HEAP_SIZE", "512M"),
		ExtraOpts: strings.Fields(os.Getenv("CASSANDRA_JVM_OPTS")),
		Version:   env("CASSANDRA_VERSION", "5.0.9"),
	}
}

// nodeConfig is what the server needs from the rendered cassandra.yaml.
type nodeConfig struct {
	ClusterName string
	Listen      string
	RPC         string // where CQL listens (rpc_address)
	Broadcast   string // broadcast_rpc_address, else rpc_address
	NativePort  int
	DC          string
}

func readNodeConfig(conf string) (nodeConfig, error) {
	var y struct {
		ClusterName    string `yaml:"cluster_name"`
		Listen         string `yaml:"listen_address"`
		RPC            string `yaml:"rpc_address"`
		BroadcastRPC   string `yaml:"broadcast_rpc_address"`
		NativePort     int    `yaml:"native_transport_port"`
		NativePortSSL  int    `yaml:"native_transport_port_ssl"`
		BroadcastAddrs string `yaml:"broadcast_address"`
	}
	b, err := os.ReadFile(filepath.Join(conf, fileYaml))
	if err != nil {
		return nodeConfig{}, err
	}
	if err := yaml.Unmarshal(b, &y); err != nil {
		return nodeConfig{}, fmt.Errorf("%s: %w", fileYaml, err)
	}
	n := nodeConfig{ClusterName: y.ClusterName, Listen: y.Listen, RPC: y.RPC, Broadcast: y.BroadcastRPC, NativePort: y.NativePort}
	if n.NativePort == 0 {
		n.NativePort = 9042
	}
	if n.RPC == "" || n.RPC == "0.0.0.0" {
		n.RPC = "127.0.0.1"
	}
	if net.ParseIP(n.RPC) == nil { // a host name (the base config's localhost): its IPv4 address
		ips, err := net.LookupIP(n.RPC)
		if err != nil {
			return nodeConfig{}, fmt.Errorf("rpc_address %s: %w", n.RPC, err)
		}
		for _, ip := range ips {
			if ip.To4() != nil {
				n.RPC = ip.String()
				break
			}
		}
	}
	if n.Broadcast == "" {
		n.Broadcast = n.RPC
	}
	if rb, err := os.ReadFile(filepath.Join(conf, fileRackDC)); err == nil {
		for _, l := range strings.Split(string(rb), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && strings.TrimSpace(k) == "dc" {
				n.DC = strings.TrimSpace(v)
			}
		}
	}
	return n, nil
}

// serverFlags: Cassandra 5.0's conf/jvm-server.options + conf/jvm17-server.options, as
// hack/cassandra.sh passes them.
func serverFlags(lib string) []string {
	jamm, _ := filepath.Glob(filepath.Join(lib, "jamm-*.jar"))
	f := []string{
		"-ea", "-da:net.openhft...", "-XX:+UseThreadPriorities", "-XX:+HeapDumpOnOutOfMemoryError",
		"-Xss256k", "-XX:+UseTLAB", "-XX:+ResizeTLAB", "-XX:+UseNUMA", "-XX:+PerfDisableSharedMem",
		"-Djava.net.preferIPv4Stack=true", "-XX:+UseG1GC", "-XX:+ParallelRefProcEnabled",
		"-XX:MaxTenuringThreshold=1", "-XX:G1HeapRegionSize=16m", "-XX:+UnlockExperimentalVMOptions",
		"-XX:G1NewSizePercent=50", "-XX:MaxGCPauseMillis=300", "-XX:InitiatingHeapOccupancyPercent=70",
		"-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints", "-XX:CICompilerCount=2",
		"-Djdk.attach.allowAttachSelf=true",
	}
	f = append(f, jdkExports(true)...)
	if len(jamm) > 0 {
		f = append(f, "-javaagent:"+jamm[0])
	}
	return f
}

// clientFlags: conf/jvm17-clients.options (nodetool).
func clientFlags() []string {
	f := []string{"-Djava.net.preferIPv4Stack=true", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx128m"}
	return append(f, jdkExports(false)...)
}

func jdkExports(server bool) []string {
	exports := []string{
		"java.base/jdk.internal.misc", "java.base/jdk.internal.ref", "java.base/sun.nio.ch",
		"java.management.rmi/com.sun.jmx.remote.internal.rmi", "java.rmi/sun.rmi.registry",
		"java.rmi/sun.rmi.server", "java.sql/java.sql",
	}
	if server {
		exports = append(exports, "java.base/java.lang.ref", "jdk.unsupported/sun.misc")
	}
	opens := []string{
		"java.base/java.lang.module", "java.base/jdk.internal.loader", "java.base/jdk.internal.ref",
		"java.base/jdk.internal.reflect", "java.base/jdk.internal.math", "java.base/jdk.internal.module",
		"java.base/jdk.internal.util.jar", "jdk.management/com.sun.management.internal",
		"java.base/sun.nio.ch", "java.base/java.io", "java.base/java.nio",
		"java.base/java.util.concurrent", "java.base/java.util",
	}
	if server {
		opens = append(opens, "java.base/java.util.concurrent.atomic")
	}
	opens = append(opens, "java.base/java.lang")
	if server {
		opens = append(opens, "java.base/java.math", "java.base/java.lang.reflect", "java.base/java.net")
	}
	var f []string
	for _, e := range exports {
		f = append(f, "--add-exports="+e+"=ALL-UNNAMED")
	}
	for _, o := range opens {
		f = append(f, "--add-opens="+o+"=ALL-UNNAMED")
	}
	return f
}

// operatorFlags filters the flags the operators render: no remote-JMX authentication (we use
// local JMX without it, for nodetool), nothing that names a file of the upstream image.
func operatorFlags(in []string) []string {
	var out []string
	for _, f := range in {
		switch {
		case strings.HasPrefix(f, "-Dcom.sun.management.jmxremote"),
			strings.HasPrefix(f, "-Dcassandra.jmx.remote"),
			strings.HasPrefix(f, "-Dcassandra.jmx.authorizer"),
			strings.HasPrefix(f, "-Djava.security.auth.login.config"),
			strings.Contains(f, "$"):
			continue
		}
		out = append(out, f)
	}
	return out
}

// javaArgs: the full command line of the Cassandra JVM.
func javaArgs(s settings, replaceIP string) ([]string, error) {
	args := serverFlags(s.Lib)
	var opts []string
	for _, name := range []string{fileJvm, fileJvm17, fileEnvOpts} {
		o, err := readOptions(filepath.Join(s.Conf, name))
		if err != nil {
			return nil, err
		}
		opts = append(opts, o...)
	}
	opts = operatorFlags(opts)
	hasXmx, hasXms := false, false
	for _, o := range opts {
		hasXmx = hasXmx || strings.HasPrefix(o, "-Xmx")
		hasXms = hasXms || strings.HasPrefix(o, "-Xms")
	}
	if !hasXms {
		args = append(args, "-Xms"+s.Heap)
	}
	if !hasXmx {
		args = append(args, "-Xmx"+s.Heap)
	}
	args = append(args, opts...)
	args = append(args, s.ExtraOpts...)
	args = append(args,
		"-Dcassandra.config=file://"+filepath.Join(s.Conf, fileYaml),
		"-Dcassandra-rackdc.properties=file://"+filepath.Join(s.Conf, fileRackDC),
		"-Dlogback.configurationFile="+filepath.Join(s.Conf, "logback.xml"),
		"-Dcassandra.logdir="+s.LogDir,
		"-Dcassandra.storagedir="+s.Data,
		"-Djava.io.tmpdir="+filepath.Join(s.Data, "tmp"),
		"-Dcassandra.jmx.local.port="+strconv.Itoa(s.JMXPort),
		"-Dcassandra-foreground=yes",
	)
	if replaceIP != "" {
		args = append(args, "-Dcassandra.replace_address_first_boot="+replaceIP)
	}
	return append(args, "-cp", s.Conf+":"+filepath.Join(s.Lib, "*"), "org.apache.cassandra.service.CassandraDaemon"), nil
}

// node is the Cassandra JVM this server supervises, and its CQL session.
type node struct {
	s   settings
	log *slog.Logger

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the JVM exits
	exitErr  error
	stopping bool
	session  *gocql.Session
	cfg      nodeConfig

	// bootstrapped: readiness has seen system.local.bootstrapped = COMPLETED since this JVM
	// started. From then on readiness only needs the CQL port (no login: a login as the default
	// superuser reads at QUORUM and fails while a data center is down).
	bootstrapped bool

	live *liveness
	jobs *jobs
}

func newNode(s settings, log *slog.Logger) *node {
	return &node{s: s, log: log, live: newLiveness(), jobs: newJobs()}
}

var errAlreadyStarted = errors.New("cassandra is already started")

// start spawns the JVM (lifecycle/start).
func (n *node) start(replaceIP string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		select {
		case <-n.exited:
		default:
			return errAlreadyStarted
		}
	}
	cfg, err := readNodeConfig(n.s.Conf)
	if err != nil {
		return err
	}
	args, err := javaArgs(n.s, replaceIP)
	if err != nil {
		return err
	}
	for _, d := range []string{n.s.Data, filepath.Join(n.s.Data, "tmp"), n.s.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	cmd := exec.Command(n.s.Java, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	n.log.Info("cassandra started", "pid", cmd.Process.Pid, "conf", n.s.Conf, "replace_ip", replaceIP)
	if n.session != nil { // a session to the previous JVM
		n.session.Close()
		n.session = nil
	}
	n.cmd, n.cfg, n.exited, n.exitErr, n.stopping, n.bootstrapped = cmd, cfg, make(chan struct{}), nil, false, false
	exited := n.exited
	go func() {
		err := cmd.Wait()
		n.mu.Lock()
		n.exitErr = err
		if n.session != nil {
			n.session.Close()
			n.session = nil
		}
		n.mu.Unlock()
		n.log.Info("cassandra exited", "err", err)
		close(exited)
	}()
	return nil
}

// state: started (a JVM was spawned), running (it has not exited), crashed (it exited
// without being asked to).
func (n *node) state() (started, running, crashed bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false, false, false
	}
	select {
	case <-n.exited:
		return true, false, !n.stopping
	default:
		return true, true, false
	}
}

// stop sends SIGTERM to the JVM (Cassandra's shutdown hook drains) and waits, then SIGKILL.
func (n *node) stop(timeout time.Duration) {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.stopping = true
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(timeout):
		n.log.Warn("cassandra did not stop in time: SIGKILL", "pid", cmd.Process.Pid)
		_ = cmd.Process.Kill()
		<-exited
	}
}

// cqlPortOpen: the native transport accepts connections (it closes on drain).
func (n *node) cqlPortOpen(ctx context.Context) error {
	n.mu.Lock()
	addr := net.JoinHostPort(n.cfg.RPC, strconv.Itoa(n.cfg.NativePort))
	n.mu.Unlock()
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("CQL port %s: %w", addr, err)
	}
	return c.Close()
}

// dropSession closes the CQL session: the next request logs in again (credentials() order).
func (n *node) dropSession() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.session != nil {
		n.session.Close()
		n.session = nil
	}
}

func (n *node) setBootstrapped() {
	n.mu.Lock()
	n.bootstrapped = true
	n.mu.Unlock()
}

func (n *node) isBootstrapped() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.bootstrapped
}

// credentials: the saved superuser (a role created through ops/auth/role), then Cassandra's
// default superuser. With AllowAllAuthenticator any of them works.
type credentials struct{ User, Password string }

func (n *node) credsFile() string { return filepath.Join(n.s.Data, ".cassandra-mgmt-superuser.json") }

func (n *node) credentials() []credentials {
	var out []credentials
	if u := os.Getenv("CASSANDRA_USER"); u != "" {
		out = append(out, credentials{u, os.Getenv("CASSANDRA_PASSWORD")})
	}
	if b, err := os.ReadFile(n.credsFile()); err == nil {
		var c credentials
		if json.Unmarshal(b, &c) == nil && c.User != "" {
			out = append(out, c)
		}
	}
	return append(out, credentials{"cassandra", "cassandra"})
}

func (n *node) saveSuperuser(c credentials) {
	b, _ := json.Marshal(c)
	if err := os.WriteFile(n.credsFile(), b, 0o600); err != nil {
		n.log.Warn("saving the superuser's credentials", "err", err)
	}
}

// cql returns a session to the local node (one host: no topology, no token awareness). The
// lock is not held while connecting: liveness must answer at once whatever CQL does.
func (n *node) cql(ctx context.Context) (*gocql.Session, error) {
	n.mu.Lock()
	if n.session != nil && !n.session.Closed() {
		s := n.session
		n.mu.Unlock()
		return s, nil
	}
	if n.cmd == nil {
		n.mu.Unlock()
		return nil, errors.New("cassandra is not started")
	}
	exited, cfg := n.exited, n.cfg
	n.mu.Unlock()
	select {
	case <-exited:
		return nil, errors.New("cassandra is not running")
	default:
	}
	addr := net.JoinHostPort(cfg.RPC, strconv.Itoa(cfg.NativePort))
	if c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr); err != nil {
		return nil, fmt.Errorf("CQL port %s: %w", addr, err)
	} else {
		c.Close()
	}
	var last error
	for _, cr := range n.credentials() {
		c := gocql.NewCluster(addr)
		// Only ever the local node: system.local and gossip_info answer for the node asked, and
		// the driver learns the peers (even with DisableInitialHostLookup, which instead lost the
		// local host from the pool once a peer joined) and would route queries to them.
		local := net.ParseIP(cfg.RPC)
		c.HostFilter = gocql.HostFilterFunc(func(h *gocql.HostInfo) bool { return h.ConnectAddress().Equal(local) })
		c.Events.DisableTopologyEvents = true
		c.Events.DisableSchemaEvents = true
		c.NumConns = 1
		c.Timeout = 20 * time.Second
		c.ConnectTimeout = 5 * time.Second
		c.Consistency = gocql.One
		c.MaxWaitSchemaAgreement = 30 * time.Second
		c.ReconnectInterval = 0
		c.Authenticator = gocql.PasswordAuthenticator{Username: cr.User, Password: cr.Password}
		c.Logger = gocqlLogger{n.log}
		s, err := c.CreateSession()
		if err != nil {
			last = err
			continue
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		select {
		case <-exited: // the JVM went away meanwhile
			s.Close()
			return nil, errors.New("cassandra is not running")
		default:
		}
		if n.session != nil && !n.session.Closed() { // another request connected first
			s.Close()
			return n.session, nil
		}
		n.session = s
		return s, nil
	}
	return nil, fmt.Errorf("CQL session to %s: %w", addr, last)
}

// nodetoolCommand is org.apache.cassandra.tools.NodeTool against the local JMX port: what the
// API's calls run, and the image's `nodetool` (kubectl exec … nodetool repair, as in the
// upstream image).
func nodetoolCommand(ctx context.Context, s settings, args ...string) *exec.Cmd {
	a := append(clientFlags(), "-cp", filepath.Join(s.Lib, "*"), "-Dlogback.configurationFile=/dev/null",
		"org.apache.cassandra.tools.NodeTool", "-h", "127.0.0.1", "-p", strconv.Itoa(s.JMXPort))
	return exec.CommandContext(ctx, s.Java, append(a, args...)...)
}

// nodetool runs nodetoolCommand and returns its output.
func (n *node) nodetool(ctx context.Context, args ...string) (string, error) {
	cmd := nodetoolCommand(ctx, n.s, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	n.log.Info("nodetool", "args", strings.Join(args, " "), "took", time.Since(start).Round(time.Millisecond), "err", err)
	if err != nil {
		return out.String(), fmt.Errorf("nodetool %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(lastLines(out.String(), 5)))
	}
	return out.String(), nil
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

type gocqlLogger struct{ l *slog.Logger }

func (g gocqlLogger) Error(msg string, f ...gocql.LogField) { g.l.Debug("gocql: "+msg, fields(f)...) }
func (g gocqlLogger) Warning(msg string, f ...gocql.LogField) {
	g.l.Debug("gocql: "+msg, fields(f)...)
}
func (g gocqlLogger) Info(msg string, f ...gocql.LogField)  { g.l.Debug("gocql: "+msg, fields(f)...) }
func (g gocqlLogger) Debug(msg string, f ...gocql.LogField) {}

func fields(f []gocql.LogField) []any {
	out := make([]any, 0, 2*len(f))
	for _, x := range f {
		out = append(out, x.Name, x.Value.String())
	}
	return out
}
