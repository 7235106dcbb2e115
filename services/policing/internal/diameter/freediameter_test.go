package diameter

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/diameter/diametertest"
	"github.com/openaaa/openaaa/services/policing/internal/tlsfiles"
)

// freeDiameter, a Diameter daemon no one here wrote, connects to the server as a relay peer:
// CER/CEA succeed and its watchdog (DWR/DWA) is answered; the server's shutdown sends it a
// DPR (RFC 6733 §5.4), which it answers with a DPA 2001, ending the server's wait for it.
func TestFreeDiameterPeer(t *testing.T) {
	fd := freeDiameter(t)
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	var log testenv.LogBuffer
	s, err := Listen("127.0.0.1:0", Options{OriginHost: "pcrf.test", OriginRealm: "test", DPRTimeout: 20 * time.Second,
		Peers: []Peer{{OriginHost: "fd.test", Network: loopback}},
		Apps:  map[uint32]Handler{GxApplicationID: echoApp{calls: new(atomic.Int64)}},
		Log:   slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := t.TempDir()
	writeSelfSigned(t, dir, "fd.test")
	runFreeDiameter(t, s, fd, dir, fmt.Sprintf(`TLS_CA = "%s";
ConnectPeer = "pcrf.test" { ConnectTo = "127.0.0.1"; Port = %d; No_TLS; };
`, filepath.Join(dir, "cert.pem"), diametertest.Proxy(t, s.Addr().String()))) // recorded for tshark
	start := time.Now()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Shutdown took %v: freeDiameter's DPA did not end the wait", took)
	}
	if got := log.String(); !strings.Contains(got, "DPR answered") || !strings.Contains(got, "resultCode=2001") {
		t.Errorf("freeDiameter did not answer the DPR 2001; the server logged:\n%s", got)
	}
}

// The same over TLS (RFC 6733 §2.1, the handshake first, on the TLS port): freeDiameter and
// the server each check the other's certificate, and the server checks that the CER's
// Origin-Host is a name of freeDiameter's.
func TestFreeDiameterPeerTLS(t *testing.T) {
	fd := freeDiameter(t)
	dir, ours := t.TempDir(), t.TempDir()
	ca := newTestCA(t, dir)
	ca.issue(t, dir, "fd.test", 2)
	ca.issue(t, ours, "pcrf.test", 3)
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	files := &tlsfiles.Files{CertFile: filepath.Join(ours, "cert.pem"), KeyFile: filepath.Join(ours, "key.pem"),
		CAFile: filepath.Join(dir, "ca.pem"), Name: "diameter"}
	s, err := Listen("127.0.0.1:0", Options{OriginHost: "pcrf.test", OriginRealm: "test",
		Peers: []Peer{{OriginHost: "fd.test", Network: loopback}},
		Apps:  map[uint32]Handler{GxApplicationID: echoApp{calls: new(atomic.Int64)}},
		TLS:   files, TLSAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	handshakesFailed := testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedHandshake))
	runFreeDiameter(t, s, fd, dir, fmt.Sprintf(`TLS_CA = "%s";
ConnectPeer = "pcrf.test" { ConnectTo = "127.0.0.1"; Port = %d; };
`, filepath.Join(dir, "ca.pem"), s.TLSAddr().(*net.TCPAddr).Port))
	s.mu.Lock()
	var names []string
	for c, st := range s.conns {
		if st.open {
			names = append(names, c.certNames...)
		}
	}
	s.mu.Unlock()
	if !slices.Contains(names, "fd.test") {
		t.Fatalf("no open peer connection over TLS with fd.test's certificate: %v", names)
	}
	if testutil.ToFloat64(s.opt.Metrics.peersRefused.WithLabelValues(refusedHandshake)) != handshakesFailed {
		t.Fatal("a TLS handshake failed")
	}
}

func freeDiameter(t *testing.T) string {
	t.Helper()
	fd, err := exec.LookPath("freeDiameterd")
	testenv.Need(t, err == nil, "freeDiameter (hack/diameter-peers.sh install)")
	return fd
}

// runFreeDiameter starts freeDiameter (identity fd.test, credentials dir/cert.pem and
// dir/key.pem) with the peer lines given, waits until the server answered one of its
// watchdogs with it counted up as a peer, and stops it when the test ends.
func runFreeDiameter(t *testing.T, s *Server, fd, dir, peer string) {
	t.Helper()
	conf := fmt.Sprintf(`Identity = "fd.test";
Realm = "test";
ListenOn = "127.0.0.1";
Port = %d;
SecPort = %d;
No_SCTP;
No_IPv6;
TwTimer = 6;
TLS_Cred = "%s", "%s";
%s`, testenv.FreePort(t), testenv.FreePort(t), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), peer)
	if err := os.WriteFile(filepath.Join(dir, "fd.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	up := testutil.ToFloat64(s.opt.Metrics.peersUp)
	dwr := testutil.ToFloat64(s.opt.Metrics.requests.WithLabelValues("DWR", "2001"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, fd, "-c", filepath.Join(dir, "fd.conf"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the daemon this test started, by its PID
		_ = cmd.Wait()
		cancel()
	})
	// The watchdog runs every TwTimer (6 s, the minimum) ± 2 s: wait for it, bounded.
	deadline := time.Now().Add(40 * time.Second)
	for testutil.ToFloat64(s.opt.Metrics.requests.WithLabelValues("DWR", "2001")) <= dwr {
		if time.Now().After(deadline) {
			t.Fatalf("no DWR answered within 40 s (peers up %v → %v)\n%s", up, testutil.ToFloat64(s.opt.Metrics.peersUp), out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if testutil.ToFloat64(s.opt.Metrics.peersUp) != up+1 {
		t.Fatalf("peers_up %v, want %v", testutil.ToFloat64(s.opt.Metrics.peersUp), up+1)
	}
}
