package cassandra_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"

	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/app"
)

// TestNodeWaitsForCassandra: a policing node whose Cassandra is unreachable at start, then
// reachable without a schema, then migrated, stays alive and not ready, says why on /readyz,
// and serves as soon as the schema is there — no exit, so no CrashLoopBackOff on Kubernetes.
func TestNodeWaitsForCassandra(t *testing.T) {
	cassandratest.Skip(t, cluster)
	ks := keyspace(t)
	cqlPort, adminPort, acctPort := freeTCP(t), freeTCP(t), freeTCP(t)
	dir := t.TempDir()
	for name, text := range map[string]string{
		"secret":    "s3cret\n",
		"subs.yaml": "subscribers:\n  - {username: alice, password: pw}\n",
		"policing.yaml": fmt.Sprintf(`radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:%d"}
clients: [{name: lo, address: 127.0.0.1, secretFile: %s/secret, requireMessageAuthenticator: false}]
subscribers: {source: file, file: %s/subs.yaml}
session:
  store: cassandra
  cassandra: {contactPoints: ["127.0.0.1:%d"], localDC: %s, keyspace: %s, connectTimeout: 1s, timeout: 3s}
admin: {address: "127.0.0.1:%d"}
`, acctPort, dir, dir, cqlPort, cluster.DC(1), ks, adminPort),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(filepath.Join(dir, "policing.yaml"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type started struct {
		n   *app.Node
		err error
	}
	done := make(chan started, 1)
	go func() {
		n, err := app.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), new(slog.LevelVar))
		done <- started{n, err}
	}()
	admin := fmt.Sprintf("http://127.0.0.1:%d", adminPort)

	// 1. Nothing listens on the contact point.
	testenv.Eventually(t, 15*time.Second, "readyz names the unreachable store", func() bool {
		code, body := get(admin + "/readyz")
		select {
		case s := <-done:
			t.Fatalf("Start returned while Cassandra was unreachable: %v", s.err)
		default:
		}
		return code == http.StatusServiceUnavailable && strings.Contains(body, "session store")
	})
	if code, _ := get(admin + "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d while waiting for the store; want 200 (alive)", code)
	}
	if code, body := get(admin + "/metrics"); code != http.StatusOK || !strings.Contains(body, "openaaa_store_open_failures_total") {
		t.Fatalf("/metrics = %d without openaaa_store_open_failures_total", code)
	}
	select {
	case s := <-done:
		t.Fatalf("Start returned while Cassandra was unreachable: %v", s.err)
	default:
	}

	// 2. Cassandra comes (through a forwarder on the contact point), without the schema.
	stopFwd := forward(t, fmt.Sprintf("127.0.0.1:%d", cqlPort), cluster.ContactPoint(1))
	defer stopFwd()
	var last string
	defer func() { t.Logf("last /readyz: %s", last) }()
	testenv.Eventually(t, 30*time.Second, "readyz asks for the migration", func() bool {
		_, last = get(admin + "/readyz")
		return strings.Contains(last, "policing migrate")
	})

	// 3. The migration runs (the operator's schema Job): the node serves within seconds.
	migrateKS(t, ks)
	var s started
	select {
	case s = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the node did not start within 30 s of its schema")
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer scancel()
		_ = s.n.Shutdown(sctx)
	}()
	if code, body := get(admin + "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d %q after start", code, body)
	}
	p := radius.New(radius.CodeAccountingRequest, []byte("s3cret"))
	_ = rfc2865.UserName_SetString(p, "alice")
	_ = rfc2866.AcctStatusType_Set(p, rfc2866.AcctStatusType_Value_Start)
	_ = rfc2866.AcctSessionID_SetString(p, "wait-1")
	_ = rfc2865.NASIPAddress_Set(p, net.IPv4(127, 0, 0, 1))
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	resp, err := radius.Exchange(rctx, p, fmt.Sprintf("127.0.0.1:%d", acctPort))
	if err != nil || resp.Code != radius.CodeAccountingResponse {
		t.Fatalf("Accounting-Start after the wait: %v %v", resp, err)
	}
	sessions, err := s.n.Store.ByUser(rctx, "alice")
	if err != nil || len(sessions) != 1 {
		t.Fatalf("alice's sessions in Cassandra: %v, %v", sessions, err)
	}
}

func freeTCP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func get(url string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// forward accepts on from and copies each connection to to, until the returned func runs.
func forward(t *testing.T, from, to string) func() {
	t.Helper()
	ln, err := net.Listen("tcp", from)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	return func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
}
