package app_test

// Hot reload of mounted files on a running node: clients file and secret files (laid out
// and updated like a kubelet-mounted Secret), the subscriber file, SIGHUP.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/app"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

const reloadSubs = `
subscribers:
  - {username: alice, password: wonderland, profile: {framedIPAddress: 10.1.0.1}}
  - {username: bob, password: builder}
`

// reloadNode starts a node whose clients come from clientsFile (dir/clients.yaml) with the
// secrets in vol, and whose subscribers come from dir/subs.yaml.
func reloadNode(t *testing.T, dir, clients, interval string, sets ...string) *app.Node {
	t.Helper()
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "clients.yaml"), []byte(clients), 0o600))
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "subs.yaml"), []byte(reloadSubs), 0o600))
	return app.StartYAML(t, dir, `
log: {level: debug, format: text}
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0", workers: 8}
admin: {address: "127.0.0.1:0"}
clientsFile: "{{dir}}/clients.yaml"
subscribers: {source: file, file: "{{dir}}/subs.yaml"}
reload: {interval: `+interval+`}
`, sets...)
}

func reloads(t *testing.T, n *app.Node, kind, result string) float64 {
	return app.Metric(t, n, fmt.Sprintf(`openaaa_config_reloads_total{kind=%q,result=%q}`, kind, result))
}

// The scenario: a client's secret (a mounted Secret) changes while radclient traffic
// runs; the old secret stops working, the new one works, nothing else is disturbed.
func TestHotReloadClientSecretWithRadclient(t *testing.T) {
	dir := t.TempDir()
	vol := newK8sVolume(t, map[string]string{"lo-secret": "old-secret\n"})
	n := reloadNode(t, dir, fmt.Sprintf("clients:\n  - {name: lo, address: 127.0.0.1, secretFile: %q}\n", vol.path("lo-secret")), "100ms")

	if out := apptest.RadclientPAP(t, n.Addr("radius.authAddress").String(), "old-secret", "alice", "wonderland", 1, 2); !strings.Contains(out, "Access-Accept") {
		t.Fatalf("old secret before the change:\n%s", out)
	}
	// radclient traffic with the old secret runs while the Secret is updated.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var accepted, unanswered atomic.Int32
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			select {
			case <-stop:
				return
			default:
			}
			out := apptest.RadclientPAP(t, n.Addr("radius.authAddress").String(), "old-secret", "bob", "builder", 1, 1)
			if strings.Contains(out, "Access-Accept") {
				accepted.Add(1)
			} else {
				unanswered.Add(1)
			}
		}
	}()
	testenv.Eventually(t, 15*time.Second, "radclient traffic accepted", func() bool { return accepted.Load() > 0 })
	before := reloads(t, n, "clients", "ok")
	vol.update(map[string]string{"lo-secret": "new-secret\n"})
	// The new secret in force, as the NAS sees it: not the reload counter alone, which a cold
	// make test once saw rise while the old secret still answered for seconds (2026-11-29).
	testenv.Eventually(t, 10*time.Second, "the new secret answered", func() bool {
		return strings.Contains(apptest.RadclientPAP(t, n.Addr("radius.authAddress").String(), "new-secret", "alice", "wonderland", 1, 1), "Access-Accept")
	})
	close(stop)
	wg.Wait()
	t.Logf("radclient traffic with the old secret: %d accepted before the swap, %d unanswered after", accepted.Load(), unanswered.Load())
	if got := reloads(t, n, "clients", "ok"); got <= before {
		t.Errorf("clients reloads ok: %v, want more than %v", got, before)
	}
	if out := apptest.RadclientPAP(t, n.Addr("radius.authAddress").String(), "old-secret", "alice", "wonderland", 1, 1); strings.Contains(out, "Received") {
		t.Errorf("old secret still answered after the new one was:\n%s", out)
	}
}

// Steady traffic while the clients and subscriber files are replaced over and over: every
// request is answered (no timeouts), with the right answer.
func TestHotReloadDropsNoRequest(t *testing.T) {
	dir := t.TempDir()
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("steady\n"), 0o600))
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "other"), []byte("other-nas\n"), 0o600))
	base := fmt.Sprintf("clients:\n  - {name: lo, address: 127.0.0.0/8, secretFile: %q}\n", filepath.Join(dir, "secret"))
	n := reloadNode(t, dir, base, "20ms")
	okBefore := reloads(t, n, "clients", "ok") + reloads(t, n, "subscribers", "ok")

	const workers = 4
	deadline := time.Now().Add(3 * time.Second)
	var sent, answered, wrong atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000 && time.Now().Before(deadline); i++ {
				sent.Add(1)
				user, pass, want := "alice", "wonderland", radius.CodeAccessAccept
				if (i+w)%5 == 0 {
					pass, want = "nope", radius.CodeAccessReject
				}
				reply, err := apptest.Send(n.Addr("radius.authAddress"), apptest.PAP("steady", user, pass), 2*time.Second)
				if err != nil {
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				answered.Add(1)
				if reply.Code != want || (want == radius.CodeAccessAccept && rfc2865.FramedIPAddress_Get(reply).String() != "10.1.0.1") {
					wrong.Add(1)
				}
			}
		}()
	}
	// Meanwhile: 20 new clients files (a NAS added and removed) and 20 subscriber files.
	var changes int
	for i := 0; time.Now().Before(deadline.Add(-300*time.Millisecond)) && i < 20; i++ {
		clients := base
		if i%2 == 0 {
			clients += fmt.Sprintf("  - {name: other%d, address: 192.0.2.%d, secretFile: %q}\n", i, i+1, filepath.Join(dir, "other"))
		}
		apptest.WriteAtomically(t, filepath.Join(dir, "clients.yaml"), []byte(clients))
		apptest.WriteAtomically(t, filepath.Join(dir, "subs.yaml"), []byte(reloadSubs+fmt.Sprintf("  - {username: extra%d, password: x}\n", i)))
		changes++
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	done := reloads(t, n, "clients", "ok") + reloads(t, n, "subscribers", "ok") - okBefore
	t.Logf("%d requests sent, %d answered, %d wrong answers; %d file changes, %d reloads", sent.Load(), answered.Load(), wrong.Load(), changes, int(done))
	if answered.Load() != sent.Load() {
		t.Errorf("%d of %d requests unanswered during reloads (first error: %v)", sent.Load()-answered.Load(), sent.Load(), firstErr.Load())
	}
	if wrong.Load() != 0 {
		t.Errorf("%d wrong answers", wrong.Load())
	}
	if done < float64(changes) {
		t.Errorf("%v reloads for %d changes of two files", done, changes)
	}
}

// A broken clients file is rejected (logged, counted) and the clients in force stay; a new
// client whose secret file is not mounted yet is rejected until the file appears.
func TestHotReloadBrokenClientsFileKeepsOld(t *testing.T) {
	dir := t.TempDir()
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("s1\n"), 0o600))
	good := fmt.Sprintf("clients:\n  - {name: lo, address: 127.0.0.1, secretFile: %q}\n", filepath.Join(dir, "secret"))
	n := reloadNode(t, dir, good, "50ms")
	accept := func(from, secret string) bool {
		reply, err := sendFrom(from, n.Addr("radius.authAddress"), apptest.PAP(secret, "alice", "wonderland"), 700*time.Millisecond)
		return err == nil && reply.Code == radius.CodeAccessAccept
	}
	if !accept("127.0.0.1", "s1") {
		t.Fatal("not accepted before any reload")
	}
	for _, broken := range []string{
		"clients: [ {name: lo, address: 127.0.0.1",                                         // not YAML
		"clients:\n  - {name: lo, address: not-an-ip, secretFile: /x}\n",                   // invalid address
		"clients:\n  - {name: lo, address: 127.0.0.1, secretFile: /x}\n  - {nmae: typo}\n", // unknown key
		// two clients named lo (issue 33: CoA would use the first one's secret for the second's sessions)
		good + fmt.Sprintf("  - {name: lo, address: 127.0.0.2, secretFile: %q}\n", filepath.Join(dir, "secret")),
	} {
		rejected := reloads(t, n, "clients", "rejected")
		apptest.WriteAtomically(t, filepath.Join(dir, "clients.yaml"), []byte(broken))
		testenv.Eventually(t, 5*time.Second, "rejected reload", func() bool { return reloads(t, n, "clients", "rejected") > rejected })
		if !accept("127.0.0.1", "s1") || accept("127.0.0.2", "s1") {
			t.Fatalf("old clients not in force after a broken file:\n%s", broken)
		}
	}
	// A second NAS whose secret file is not there yet.
	lo2secret := filepath.Join(dir, "lo2-secret")
	rejected := reloads(t, n, "clients", "rejected")
	apptest.WriteAtomically(t, filepath.Join(dir, "clients.yaml"), []byte(good+fmt.Sprintf("  - {name: lo2, address: 127.0.0.2, secretFile: %q}\n", lo2secret)))
	testenv.Eventually(t, 5*time.Second, "rejected reload (missing secret)", func() bool { return reloads(t, n, "clients", "rejected") > rejected })
	if !accept("127.0.0.1", "s1") || accept("127.0.0.2", "s2") {
		t.Fatal("clients changed although the new file was rejected")
	}
	ok := reloads(t, n, "clients", "ok")
	apptest.Check(t, os.WriteFile(lo2secret, []byte("s2\n"), 0o600)) // the Secret is mounted now
	testenv.Eventually(t, 5*time.Second, "reload once the secret appears", func() bool { return reloads(t, n, "clients", "ok") > ok })
	if !accept("127.0.0.1", "s1") || !accept("127.0.0.2", "s2") {
		t.Fatal("new clients file not in force after its secret appeared")
	}
	// A broken subscriber file: rejected, the old subscribers stay.
	rejected = reloads(t, n, "subscribers", "rejected")
	apptest.WriteAtomically(t, filepath.Join(dir, "subs.yaml"), []byte("subscribers:\n  - {username: alice}\n  - {username: alice}\n"))
	testenv.Eventually(t, 5*time.Second, "rejected subscriber reload", func() bool { return reloads(t, n, "subscribers", "rejected") > rejected })
	if !accept("127.0.0.1", "s1") {
		t.Fatal("old subscribers not in force after a broken subscriber file")
	}
}

// With polling off, SIGHUP reloads.
func TestHotReloadOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("hup\n"), 0o600))
	n := reloadNode(t, dir, fmt.Sprintf("clients:\n  - {name: lo, address: 127.0.0.1, secretFile: %q}\n", filepath.Join(dir, "secret")), "0s")
	apptest.WriteAtomically(t, filepath.Join(dir, "subs.yaml"), []byte(reloadSubs+"  - {username: carol, password: hup}\n"))
	time.Sleep(200 * time.Millisecond)
	reply, err := apptest.Send(n.Addr("radius.authAddress"), apptest.PAP("hup", "carol", "hup"), time.Second)
	apptest.Check(t, err)
	if reply.Code == radius.CodeAccessAccept {
		t.Fatal("file reloaded although polling is off")
	}
	apptest.Check(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	testenv.Eventually(t, 5*time.Second, "reload on SIGHUP", func() bool {
		reply, err := apptest.Send(n.Addr("radius.authAddress"), apptest.PAP("hup", "carol", "hup"), time.Second)
		return err == nil && reply.Code == radius.CodeAccessAccept
	})
}

// sendFrom sends an Access-Request from a given loopback source address (127.0.0.2 is a
// different NAS).
func sendFrom(src string, addr net.Addr, p *radius.Packet, timeout time.Duration) (*radius.Packet, error) {
	return apptest.SendFrom(&net.UDPAddr{IP: net.ParseIP(src)}, addr, p, true, timeout)
}

// Issue 32: the kubelet updates a mounted clients Secret and subscribers ConfigMap while a
// node starts, after it read them and before it watched them (while it waited for its
// store). The node must reload them at its first poll, not keep the old tables forever.
func TestHotReloadChangeDuringStartIsReloaded(t *testing.T) {
	dir := t.TempDir()
	vol := newK8sVolume(t, map[string]string{
		"clients.yaml": "clients:\n  - {name: lo, address: 127.0.0.1, secretFile: " + filepath.Join(dir, "secret") + "}\n",
		"subs.yaml":    reloadSubs,
	})
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("s1\n"), 0o600))
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "secret2"), []byte("s2\n"), 0o600))
	undo := app.SetAfterStoreOpen(func() {
		vol.update(map[string]string{
			"clients.yaml": "clients:\n  - {name: lo, address: 127.0.0.1, secretFile: " + filepath.Join(dir, "secret") + "}\n" +
				"  - {name: lo2, address: 127.0.0.2, secretFile: " + filepath.Join(dir, "secret2") + "}\n",
			"subs.yaml": reloadSubs + "  - {username: carol, password: late}\n",
		})
	})
	defer undo()
	n := app.StartYAML(t, dir, `
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0", workers: 4}
admin: {address: "127.0.0.1:0"}
clientsFile: "`+vol.path("clients.yaml")+`"
subscribers: {source: file, file: "`+vol.path("subs.yaml")+`"}
reload: {interval: 50ms}
`)
	undo()
	testenv.Eventually(t, 5*time.Second, "the second client (added during start) answered", func() bool {
		reply, err := sendFrom("127.0.0.2", n.Addr("radius.authAddress"), apptest.PAP("s2", "alice", "wonderland"), 300*time.Millisecond)
		return err == nil && reply.Code == radius.CodeAccessAccept
	})
	testenv.Eventually(t, 5*time.Second, "the subscriber added during start accepted", func() bool {
		reply, err := apptest.Send(n.Addr("radius.authAddress"), apptest.PAP("s1", "carol", "late"), 300*time.Millisecond)
		return err == nil && reply.Code == radius.CodeAccessAccept
	})
}
