package app_test

// Helpers of the LDAP and hot-reload tests (an external test package, so that its names
// never collide with the helpers of package app's own tests).

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/app"
)

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// startFromYAML starts a node from a YAML text ({{dir}} is replaced by dir).
func startFromYAML(t *testing.T, dir, text string, sets ...string) *app.Node {
	t.Helper()
	text = strings.ReplaceAll(text, "{{dir}}", dir)
	path := filepath.Join(dir, fmt.Sprintf("policing-%d.yaml", time.Now().UnixNano()))
	check(t, os.WriteFile(path, []byte(text), 0o600))
	cfg, err := config.Load(path, sets, nil)
	check(t, err)
	level := new(slog.LevelVar)
	var w io.Writer = io.Discard
	if testing.Verbose() {
		w = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	n, err := app.Start(context.Background(), cfg, log, level)
	check(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	return n
}

// send sends one request (Access-Request with a Message-Authenticator, or
// Accounting-Request) and waits up to timeout for the verified reply.
func send(addr net.Addr, p *radius.Packet, timeout time.Duration) (*radius.Packet, error) {
	return sendVia(nil, addr, p, timeout)
}

// sendVia is send from a given local address (nil: any).
func sendVia(local *net.UDPAddr, addr net.Addr, p *radius.Packet, timeout time.Duration) (*radius.Packet, error) {
	b, err := p.Encode()
	if err != nil {
		return nil, err
	}
	off := -1
	if p.Code == radius.CodeAccessRequest {
		b, off = radiusx.AppendMessageAuthenticator(b)
	}
	radiusx.SignRequest(b, off, p.Secret)
	raddr, err := net.ResolveUDPAddr("udp", addr.String())
	if err != nil {
		return nil, err
	}
	conn, err := net.DialUDP("udp", local, raddr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(b); err != nil {
		return nil, err
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		return nil, err
	}
	if err := radiusx.VerifyResponse(buf[:n], b[4:20], p.Secret, p.Code == radius.CodeAccessRequest); err != nil {
		return nil, fmt.Errorf("reply does not verify: %w", err)
	}
	return radius.Parse(buf[:n], p.Secret)
}

func pap(secret, user, pass string) *radius.Packet {
	p := radius.New(radius.CodeAccessRequest, []byte(secret))
	rfc2865.UserName_SetString(p, user)
	rfc2865.UserPassword_SetString(p, pass)
	return p
}

func acctStart(secret, id, user string) *radius.Packet {
	p := radius.New(radius.CodeAccountingRequest, []byte(secret))
	rfc2866.AcctStatusType_Set(p, rfc2866.AcctStatusType_Value_Start)
	rfc2866.AcctSessionID_SetString(p, id)
	rfc2865.UserName_SetString(p, user)
	rfc2865.NASIPAddress_Set(p, net.IPv4(192, 0, 2, 7))
	return p
}

// radclientAuth sends one Access-Request with FreeRADIUS's radclient and returns its output.
func radclientAuth(t *testing.T, addr net.Addr, secret, user, pass string, timeoutSec, retries int) string {
	t.Helper()
	bin := testenv.LookPath(t, "radclient", "Debian freeradius-utils")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-x", "-r", fmt.Sprint(retries), "-t", fmt.Sprint(timeoutSec), addr.String(), "auth", secret)
	cmd.Stdin = strings.NewReader(fmt.Sprintf("User-Name = %q\nUser-Password = %q\nMessage-Authenticator = 0x00\n", user, pass))
	out, err := cmd.CombinedOutput()
	if err != nil && len(out) == 0 {
		return err.Error()
	}
	return string(out)
}

// scrape reads one series (exact name with labels) from the node's /metrics; 0 if absent.
func scrape(t *testing.T, n *app.Node, series string) float64 {
	t.Helper()
	return testenv.Metric(t, n.Addr("admin.address").String(), series)
}

// waitUntil polls cond every 20 ms until it holds or within passes.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// k8sVolume mimics how the kubelet lays out a mounted Secret: dir/NAME -> ..data/NAME,
// ..data -> ..<timestamp>/, and an update writes a new timestamp directory and swaps the
// ..data symlink atomically (rename).
type k8sVolume struct {
	t   *testing.T
	dir string
	gen int
}

func newK8sVolume(t *testing.T, files map[string]string) *k8sVolume {
	v := &k8sVolume{t: t, dir: t.TempDir()}
	v.update(files)
	for name := range files {
		check(t, os.Symlink(filepath.Join("..data", name), filepath.Join(v.dir, name)))
	}
	return v
}

func (v *k8sVolume) path(name string) string { return filepath.Join(v.dir, name) }

func (v *k8sVolume) update(files map[string]string) {
	v.gen++
	ts := fmt.Sprintf("..2026_01_01_00_00_%02d.%d", v.gen, time.Now().UnixNano())
	check(v.t, os.Mkdir(filepath.Join(v.dir, ts), 0o755))
	for name, text := range files {
		check(v.t, os.WriteFile(filepath.Join(v.dir, ts, name), []byte(text), 0o600))
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	check(v.t, os.Symlink(ts, tmp))
	check(v.t, os.Rename(tmp, filepath.Join(v.dir, "..data")))
}
