package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/internal/eapoltest"
	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

const interNodeSecret = "inter-node-secret-for-tests"

// forwardingNodes starts three EAP nodes (node-a, node-b, node-c) with forwarding on, the
// same certificates and subscribers, and one node registry: the embedded store knows only
// its own node, so each node's record, as it registered it, is copied into the others'
// stores (what a shared store, Cassandra or hybrid, does by itself). timing is the forward
// block's timeout and retries.
func forwardingNodes(t *testing.T, dir, timing string) []*Node {
	t.Helper()
	eapPKI(t, dir)
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "internode"), []byte(interNodeSecret+"\n"), 0o600))
	forward := "  forward: {address: \"127.0.0.1:0\", secretFile: {{dir}}/internode, " + timing + "}\n"
	var nodes []*Node
	for _, id := range []string{"node-a", "node-b", "node-c"} {
		nodes = append(nodes, eapNodeAs(t, dir, id, forward))
	}
	ctx := context.Background()
	for _, n := range nodes {
		id := n.Config.EAP.NodeID
		var rec *session.Node
		testenv.Eventually(t, 10*time.Second, id+" in its node registry", func() bool {
			r, err := n.Store.(session.NodeRegistry).LookupNode(ctx, id)
			rec = r
			return err == nil
		})
		if rec.EAPForward != n.Addr("eap.forward.address").String() {
			t.Fatalf("%s registered %q, its listener is %s", id, rec.EAPForward, n.Addr("eap.forward.address"))
		}
		for _, o := range nodes {
			if o != n {
				apptest.Check(t, o.Store.(session.NodeRegistry).RegisterNode(ctx, *rec, 10*time.Minute))
			}
		}
	}
	return nodes
}

// EAP-TLS (1.2 and 1.3), PEAP-MSCHAPv2 (1.2 and 1.3) and TTLS-PAP through a relay that sends the first
// round (the Identity) to node-a and every other round to node-b and node-c in turn: each
// of those is forwarded to node-a, which owns the conversation, and its answers, the last
// Access-Accept with the MPPE keys encrypted for the NAS ("MPPE keys OK"), reach the peer.
func TestEAPForwardedRounds(t *testing.T) {
	dir := t.TempDir()
	nodes := forwardingNodes(t, dir, "timeout: 1s, retries: 2")
	// node-a once, then node-b and node-c alternately for longer than any conversation.
	backends := []string{nodes[0].Addr("radius.authAddress").String()}
	for range 30 {
		backends = append(backends, nodes[1].Addr("radius.authAddress").String(), nodes[2].Addr("radius.authAddress").String())
	}
	relay := testenv.StartUDPRelay(t, backends...)
	answered := `openaaa_eap_forwarded_rounds_total{result="answered"}`
	received := `openaaa_eap_forwarded_rounds_received_total`
	cases := []struct{ name, network, tls string }{
		{"tls-1.2", tlsNetwork("alice", "phase1=\"tls_disable_tlsv1_3=1\""), "1.2"},
		{"tls-1.3", tlsNetwork("alice", eapoltest.TLS13), "1.3"},
		{"peap-mschapv2", tunnelNetwork("PEAP", "MSCHAPV2", "alice", "alicepw"), "1.2"},
		{"peap-mschapv2-tls-1.3", tunnelNetwork("PEAP", "MSCHAPV2", "alice", "alicepw") + eapoltest.TLS13, "1.3"},
		{"ttls-pap", tunnelNetwork("TTLS", "PAP", "alice", "alicepw"), "1.2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			relay.SetNext(0)
			sentBefore := relay.Sent()
			ansBefore, recBefore := metricSum(t, nodes, answered), metricSum(t, nodes, received)
			out, ok := runEapolTest(t, relay.Addr(), dir, c.network, nil)
			if !ok {
				t.Fatalf("eapol_test did not succeed:\n%s", out)
			}
			if !strings.Contains(out, "MPPE keys OK: 1  mismatch: 0") {
				t.Fatalf("the relayed Access-Accept's MPPE keys are not the peer's MSK:\n%s", out)
			}
			if got := tlsVersion(out); got != c.tls {
				t.Fatalf("TLS %q, want %s:\n%s", got, c.tls, out)
			}
			var rounds float64
			for i, s := range relay.Sent() {
				rounds += float64(s - sentBefore[i])
			}
			ans, rec := metricSum(t, nodes, answered)-ansBefore, metricSum(t, nodes, received)-recBefore
			if rounds < 4 || ans != rounds-1 || rec != ans {
				t.Fatalf("%v rounds: %v forwarded and answered, %v received by the owner; want every round but the first", rounds, ans, rec)
			}
		})
	}
}

// eapIdentity is an Access-Request with EAP-Response/Identity (Identifier id) and state.
func eapIdentity(secret string, id byte, state []byte) *radius.Packet {
	p := radius.New(radius.CodeAccessRequest, []byte(secret))
	_ = rfc2865.UserName_SetString(p, "alice")
	_ = rfc2865.NASIPAddress_Set(p, net.IPv4(127, 0, 0, 1))
	if state == nil {
		p.Add(rfc2869.EAPMessage_Type, radius.Attribute{eap.CodeResponse, id, 0, 10, eap.TypeIdentity, 'a', 'l', 'i', 'c', 'e'})
	} else { // a Nak asking for EAP-TLS
		p.Add(rfc2869.EAPMessage_Type, radius.Attribute{eap.CodeResponse, id, 0, 6, eap.TypeNak, eap.TypeTLS})
		p.Add(rfc2865.State_Type, radius.Attribute(state))
	}
	return p
}

// A round whose owner stopped, or is in no registry, ends in Access-Reject with
// EAP-Failure (owner_unreachable); a request on the forwarding port that does not verify
// under the inter-node secret is dropped and counted.
func TestEAPForwardOwnerGoneAndForgery(t *testing.T) {
	dir := t.TempDir()
	nodes := forwardingNodes(t, dir, "timeout: 200ms, retries: 1") // given up within exchange's 700 ms
	a, b := nodes[0], nodes[1]
	admin := b.Addr("admin.address").String()
	refused := `openaaa_eap_rejects_total{reason="owner_unreachable"}`
	timeouts := `openaaa_eap_forwarded_rounds_total{result="timeout"}`
	unknown := `openaaa_eap_forwarded_rounds_total{result="owner_unknown"}`

	// The Identity on node-a: PEAP proposed, the conversation in node-a's memory.
	reply, err := exchange(t, a.Addr("radius.authAddress"), eapIdentity(radclientSecret, 1, nil), true)
	apptest.Check(t, err)
	state := rfc2865.State_Get(reply)
	if owner, ok := eap.InMemoryOwner(state); reply.Code != radius.CodeAccessChallenge || !ok || owner != "node-a" {
		t.Fatalf("Identity answered %v, State of %q", reply.Code, owner)
	}
	eapID := rfc2869.EAPMessage_Get(reply)[1]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	apptest.Check(t, a.Shutdown(ctx))

	before, beforeT := testenv.Metric(t, admin, refused), testenv.Metric(t, admin, timeouts)
	reply, err = exchange(t, b.Addr("radius.authAddress"), eapIdentity(radclientSecret, eapID, state), true)
	apptest.Check(t, err)
	if m := rfc2869.EAPMessage_Get(reply); reply.Code != radius.CodeAccessReject || len(m) != 4 || m[0] != eap.CodeFailure || m[1] != eapID {
		t.Fatalf("a round of a stopped owner answered %v %x", reply.Code, m)
	}
	if got := testenv.Metric(t, admin, refused); got != before+1 {
		t.Fatalf("%s = %v, want %v", refused, got, before+1)
	}
	if got := testenv.Metric(t, admin, timeouts); got != beforeT+1 {
		t.Fatalf("%s = %v, want %v", timeouts, got, beforeT+1)
	}

	// A State naming a node no registry knows.
	stranger := append([]byte("OA\x01\x06node-z"), make([]byte, 16)...)
	before, beforeU := testenv.Metric(t, admin, refused), testenv.Metric(t, admin, unknown)
	reply, err = exchange(t, b.Addr("radius.authAddress"), eapIdentity(radclientSecret, 7, stranger), true)
	apptest.Check(t, err)
	if reply.Code != radius.CodeAccessReject || testenv.Metric(t, admin, refused) != before+1 || testenv.Metric(t, admin, unknown) != beforeU+1 {
		t.Fatalf("a round of an unknown node: %v, %s counted %v", reply.Code, unknown, testenv.Metric(t, admin, unknown)-beforeU)
	}

	// Forged: a forwarded request under another secret, and one without
	// Message-Authenticator, to node-b's forwarding port: no answer, counted.
	forged := eapIdentity("not-the-inter-node-secret", 1, nil)
	forged.Add(224, radius.Attribute("nas"))
	wire, err := forged.Encode()
	apptest.Check(t, err)
	wire, off := radiusx.AppendMessageAuthenticator(wire)
	radiusx.SignRequest(wire, off, forged.Secret)
	for _, c := range []struct {
		reason string
		wire   []byte
	}{{"bad_message_authenticator", wire}, {"missing_message_authenticator", mustEncode(t, forged)}} {
		series := `openaaa_radius_requests_dropped_total{reason="` + c.reason + `"}`
		before := testenv.Metric(t, admin, series)
		conn, err := net.Dial("udp", b.Addr("eap.forward.address").String())
		apptest.Check(t, err)
		_, err = conn.Write(c.wire)
		apptest.Check(t, err)
		testenv.Eventually(t, 10*time.Second, c.reason+" counted", func() bool { return testenv.Metric(t, admin, series) == before+1 })
		_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if n, err := conn.Read(make([]byte, 4096)); err == nil {
			t.Fatalf("%s: answered (%d octets)", c.reason, n)
		}
		conn.Close()
	}
	// The same request under the inter-node secret is served: the port works.
	ok := eapIdentity(interNodeSecret, 1, nil)
	ok.Add(224, radius.Attribute("nas"))
	reply, err = exchange(t, b.Addr("eap.forward.address"), ok, true)
	apptest.Check(t, err)
	if reply.Code != radius.CodeAccessChallenge {
		t.Fatalf("a forwarded Identity answered %v", reply.Code)
	}
}

func mustEncode(t *testing.T, p *radius.Packet) []byte {
	t.Helper()
	b, err := p.Encode()
	apptest.Check(t, err)
	return b
}
