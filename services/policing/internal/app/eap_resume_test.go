package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/internal/testpki"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

// The shared ticket key of node-a and node-b, and node-c's own.
var (
	sharedTicketKey = strings.Repeat("s", 43)
	ownTicketKey    = strings.Repeat("c", 43)
)

// resumptionNodes starts node-a and node-b sharing the ticket key file dir/tickets, and
// node-c with its own (dir/tickets-c), all three with a CRL (dir/ca.crl, revoking nothing)
// and resumption on, behind a relay that places each conversation on the node place returns
// for it (called at its first round, an Access-Request without State, with the
// conversation's number from 0) and keeps its later rounds there. No forwarding is needed.
func resumptionNodes(t *testing.T, dir string) ([]*Node, *testenv.UDPRelay, *testpki.CA) {
	t.Helper()
	ca := eapPKI(t, dir)
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "ca.crl"), ca.CRL(t, 1, time.Now().Add(24*time.Hour)), 0o600))
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "tickets"), []byte("# the shared ticket keys\n"+sharedTicketKey+"\n"), 0o600))
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "tickets-c"), []byte(ownTicketKey+"\n"), 0o600))
	var nodes []*Node
	var backends []string
	for _, id := range []string{"node-a", "node-b", "node-c"} {
		file := "tickets"
		if id == "node-c" {
			file = "tickets-c"
		}
		n := eapNodeAs(t, dir, id, "  crlFile: {{dir}}/ca.crl\n  resumption: {enabled: true, ticketKeyFile: {{dir}}/"+file+"}\nreload: {interval: 100ms}\n")
		nodes = append(nodes, n)
		backends = append(backends, n.Addr("radius.authAddress").String())
	}
	return nodes, testenv.StartUDPRelay(t, backends...), ca
}

// place routes each conversation through relay to the node of its number in nodes (0:
// node-a), after running before[its number] if any.
func place(relay *testenv.UDPRelay, before map[int]func(), nodes ...int) {
	conv, current := -1, 0
	relay.SetRoute(func(b []byte) int {
		p, err := radius.Parse(b, []byte(radclientSecret))
		if err == nil && len(rfc2865.State_Get(p)) == 0 {
			conv++
			if f := before[conv]; f != nil {
				f()
			}
			current = nodes[min(conv, len(nodes)-1)]
		}
		return current
	})
}

// handshakes reads openaaa_eap_tls_handshakes_total of method, resumed and full, summed over
// the nodes.
func handshakes(t *testing.T, method string, nodes ...*Node) (resumed, full float64) {
	t.Helper()
	s := `openaaa_eap_tls_handshakes_total{method="` + method + `",resumed="`
	return metricSum(t, nodes, s+`true"}`), metricSum(t, nodes, s+`false"}`)
}

// reauth runs eapol_test with one re-authentication (-r 1: it keeps the TLS session and
// offers it again) and checks that both succeeded with the MPPE keys of the peer's MSKs,
// and that the second one resumed (eapol_test's OpenSSL log, and the servers' metric) or not.
func reauth(t *testing.T, nodes []*Node, relay *testenv.UDPRelay, dir, method, network string, resumed bool) string {
	t.Helper()
	r0, f0 := handshakes(t, method, nodes...)
	out, ok := runEapolTest(t, relay.Addr(), dir, network, nil, "-r", "1")
	if !ok || !strings.Contains(out, "MPPE keys OK: 2  mismatch: 0") {
		t.Fatalf("eapol_test did not succeed twice with the MPPE keys of its MSK:\n%s", out)
	}
	r, f := handshakes(t, method, nodes...)
	wantR, wantF := r0, f0+2
	if resumed {
		wantR, wantF = r0+1, f0+1
	}
	if r != wantR || f != wantF {
		t.Fatalf("%s handshakes resumed %v full %v, want %v and %v", method, r, f, wantR, wantF)
	}
	first, second, _ := strings.Cut(out, "CTRL-EVENT-EAP-SUCCESS")
	if strings.Contains(first, "resumed=1") || strings.Contains(second, "Handshake finished - resumed=1") != resumed {
		t.Fatalf("the peer's handshakes are not a full one then a resumed=%v one:\n%s", resumed, out)
	}
	return second
}

// Session resumption (eap.resumption, docs/eap.md): eapol_test authenticates on node-a, then
// re-authenticates on node-b, which shares node-a's ticket key file: EAP-TLS (TLS 1.2 and
// 1.3), PEAP and TTLS resume the TLS session there (the tunnels run their inner method
// again), with the MPPE keys of the resumed session. On node-c, whose key differs, the
// re-authentication is a full handshake and succeeds. A key added to node-c's file is in
// force without a restart, and a ticket under its second key still resumes (rotation).
func TestEAPResumption(t *testing.T) {
	dir := t.TempDir()
	nodes, relay, _ := resumptionNodes(t, dir)
	ticket := " tls_disable_session_ticket=0\""
	tls12 := tlsNetwork("alice", "phase1=\"tls_disable_tlsv1_3=1"+ticket)
	cases := []struct {
		name, method, network string
		resumed               bool
	}{
		{"tls-1.2", "tls", tls12, true},
		{"tls-1.3", "tls", tlsNetwork("alice", "phase1=\"tls_disable_tlsv1_3=0"+ticket), true},
		{"peap-mschapv2-tls-1.2", "peap", tunnelNetwork("PEAP", "MSCHAPV2", "alice", "alicepw") + "phase1=\"peapver=0" + ticket, true},
		{"peap-mschapv2-tls-1.3", "peap", tunnelNetwork("PEAP", "MSCHAPV2", "alice", "alicepw") + "phase1=\"tls_disable_tlsv1_3=0" + ticket, true},
		// No tickets for TTLS (resumption.go): a full handshake, and the inner method again.
		{"ttls-pap-tls-1.2", "ttls", tunnelNetwork("TTLS", "PAP", "alice", "alicepw") + "phase1=\"" + ticket, false},
		{"ttls-pap-tls-1.3", "ttls", tunnelNetwork("TTLS", "PAP", "alice", "alicepw") + "phase1=\"tls_disable_tlsv1_3=0" + ticket, false},
	}
	for _, c := range cases {
		t.Run(c.name+" on another node", func(t *testing.T) {
			place(relay, nil, 0, 1)
			second := reauth(t, nodes, relay, dir, c.method, c.network, c.resumed)
			if v := c.name[len(c.name)-3:]; !strings.Contains(second, "Using TLS version TLSv"+v) { // the name ends in the version
				t.Fatalf("the re-authentication is not TLS %s:\n%s", v, second)
			}
			// The tunnels' inner method ran again in the re-authentication.
			if inner := map[string]string{"peap": "EAP-MSCHAPV2: Authentication succeeded", "ttls": "EAP-TTLS: Phase 2 PAP Request"}[c.method]; inner != "" && !strings.Contains(second, inner) {
				t.Fatalf("no %q in the re-authentication:\n%s", inner, second)
			}
		})
	}
	t.Run("another key: a full handshake", func(t *testing.T) {
		place(relay, nil, 0, 2)
		reauth(t, nodes, relay, dir, "tls", tls12, false)
	})
	t.Run("a key added to the file, second: resumed, no restart", func(t *testing.T) {
		reloads := func() float64 {
			return Metric(t, nodes[2], `openaaa_config_reloads_total{kind="eap-ticket-keys",result="ok"}`)
		}
		before := reloads()
		apptest.WriteAtomically(t, filepath.Join(dir, "tickets-c"), []byte(ownTicketKey+"\n"+sharedTicketKey+"\n"))
		testenv.Eventually(t, 20*time.Second, "node-c's new ticket keys", func() bool { return reloads() > before })
		place(relay, nil, 0, 2)
		reauth(t, nodes, relay, dir, "tls", tls12, true)
	})
}

// A resumed EAP-TLS session is checked as a full handshake is: its certificate (from the
// ticket) against the CRL in force, its subscriber against the subscribers in force. Alice's
// certificate revoked, or alice removed, between her authentication on node-a and her
// re-authentication on node-b: the resumption is refused with EAP-Failure
// (certificate_revoked, unknown_user), over TLS 1.2 and 1.3, as her full handshake would be.
func TestEAPResumptionRefused(t *testing.T) {
	dir := t.TempDir()
	nodes, relay, ca := resumptionNodes(t, dir)
	crlFile, subsFile := filepath.Join(dir, "ca.crl"), filepath.Join(dir, "subs.yaml")
	subs, err := os.ReadFile(subsFile)
	apptest.Check(t, err)
	var lines []string
	for l := range strings.Lines(string(subs)) {
		if !strings.Contains(l, "username: alice") {
			lines = append(lines, l)
		}
	}
	withoutAlice := strings.Join(lines, "")
	day := time.Now().Add(24 * time.Hour)
	crlNumber := int64(1)
	crl := func(revoked ...int64) []byte {
		crlNumber++
		return ca.CRL(t, crlNumber, day, revoked...)
	}
	// change is in force on node-b before the re-authentication's first round reaches it.
	change := func(file string, data []byte) func() {
		return func() {
			apptest.WriteAtomically(t, file, data)
			if _, rejected := nodes[1].Reloader.Reload(); rejected != 0 {
				t.Errorf("node-b refused the new %s", file)
			}
		}
	}
	ticket := " tls_disable_session_ticket=0\""
	for _, v := range []string{"1.2", "1.3"} {
		network := tlsNetwork("alice", "phase1=\"tls_disable_tlsv1_3="+map[string]string{"1.2": "1", "1.3": "0"}[v]+ticket)
		cases := []struct {
			name, reason string
			change       func()
		}{
			{"certificate revoked", "certificate_revoked", change(crlFile, crl(3))},
			{"subscriber removed", "unknown_user", change(subsFile, []byte(withoutAlice))},
		}
		for _, c := range cases {
			t.Run(c.name+" tls-"+v, func(t *testing.T) {
				t.Cleanup(func() { // alice back, for the next case
					apptest.WriteAtomically(t, subsFile, subs)
					apptest.WriteAtomically(t, crlFile, crl())
					for _, n := range nodes {
						n.Reloader.Reload()
					}
				})
				series := `openaaa_eap_rejects_total{reason="` + c.reason + `"}`
				before := Metric(t, nodes[1], series)
				resumed, _ := handshakes(t, "tls", nodes[1])
				place(relay, map[int]func(){1: c.change}, 0, 1)
				out, ok := runEapolTest(t, relay.Addr(), dir, network, nil, "-r", "1")
				first, second, _ := strings.Cut(out, "CTRL-EVENT-EAP-SUCCESS")
				if ok || !strings.Contains(first, "Using TLS version TLSv"+v) || !strings.Contains(second, "EAP: Received EAP-Failure") {
					t.Fatalf("not a success then an EAP-Failure:\n%s", out)
				}
				if got := Metric(t, nodes[1], series); got != before+1 {
					t.Fatalf("%s = %v, want %v", series, got, before+1)
				}
				// The revoked certificate's resumption is aborted in the handshake; the removed
				// subscriber's resumed handshake completes and is refused after.
				want := resumed + map[string]float64{"certificate_revoked": 0, "unknown_user": 1}[c.reason]
				if r, _ := handshakes(t, "tls", nodes[1]); r != want {
					t.Fatalf("resumed handshakes on node-b %v, want %v", r, want)
				}
			})
		}
	}
}

// eap.resumption without a ticketKeyFile: a key of the process's own, so a re-authentication
// on the same node resumes (EAP-TLS 1.2).
func TestEAPResumptionOwnKey(t *testing.T) {
	dir := t.TempDir()
	eapPKI(t, dir)
	n := eapNodeWith(t, dir, "  resumption: {enabled: true}\n")
	relay := testenv.StartUDPRelay(t, n.Addr("radius.authAddress").String())
	reauth(t, []*Node{n}, relay, dir, "tls", tlsNetwork("alice", "phase1=\"tls_disable_tlsv1_3=1 tls_disable_session_ticket=0\""), true)
}
