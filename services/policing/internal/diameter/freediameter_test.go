package diameter

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/internal/testenv"
)

// freeDiameter, a Diameter daemon no one here wrote, connects to the server as a relay peer:
// CER/CEA succeed and its watchdog (DWR/DWA) is answered.
func TestFreeDiameterPeer(t *testing.T) {
	fd, err := exec.LookPath("freeDiameterd")
	testenv.Need(t, err == nil, "freeDiameter (hack/diameter-peers.sh install)")
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	s, err := Listen("127.0.0.1:0", Options{OriginHost: "pcrf.test", OriginRealm: "test",
		Peers: []Peer{{OriginHost: "fd.test", Network: loopback}},
		Apps:  map[uint32]Handler{GxApplicationID: echoApp{calls: new(atomic.Int64)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := t.TempDir()
	listen := testenv.FreePort(t)
	conf := fmt.Sprintf(`Identity = "fd.test";
Realm = "test";
ListenOn = "127.0.0.1";
Port = %d;
SecPort = %d;
No_SCTP;
No_IPv6;
TwTimer = 6;
TLS_Cred = "%s", "%s";
TLS_CA = "%s";
ConnectPeer = "pcrf.test" { ConnectTo = "127.0.0.1"; Port = %d; No_TLS; };
`, listen, testenv.FreePort(t), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "cert.pem"), s.Addr().(*net.TCPAddr).Port)
	writeSelfSigned(t, dir, "fd.test")
	if err := os.WriteFile(filepath.Join(dir, "fd.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	up := testutil.ToFloat64(peersUp)
	dwr := testutil.ToFloat64(requests.WithLabelValues("DWR", "2001"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, fd, "-c", filepath.Join(dir, "fd.conf"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill() // the daemon this test started, by its PID
		_ = cmd.Wait()
	}()
	// The watchdog runs every TwTimer (6 s, the minimum) ± 2 s: wait for it, bounded.
	deadline := time.Now().Add(40 * time.Second)
	for testutil.ToFloat64(requests.WithLabelValues("DWR", "2001")) <= dwr {
		if time.Now().After(deadline) {
			t.Fatalf("no DWR answered within 40 s (peers up %v → %v)\n%s", up, testutil.ToFloat64(peersUp), out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if testutil.ToFloat64(peersUp) != up+1 {
		t.Fatalf("peers_up %v, want %v", testutil.ToFloat64(peersUp), up+1)
	}
}
