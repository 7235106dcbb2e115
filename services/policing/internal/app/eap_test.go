package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2759"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/internal/eapoltest"
	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/internal/testpki"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
	"github.com/openaaa/openaaa/services/policing/internal/eap"
)

// writePEM writes dir/name.pem and dir/name.key.
func writePEM(t *testing.T, dir, name string, cert, key []byte) {
	t.Helper()
	apptest.Check(t, os.WriteFile(filepath.Join(dir, name+".pem"), cert, 0o600))
	apptest.Check(t, os.WriteFile(filepath.Join(dir, name+".key"), key, 0o600))
}

// eapPKI writes into dir a CA (ca.pem), its server certificate (long enough to be sent in
// several fragments) and client certificates: alice (valid, serial 3), expired (alice,
// expired yesterday), carol (serial 5), stranger (alice, from another CA).
func eapPKI(t *testing.T, dir string) *testpki.CA {
	t.Helper()
	testenv.LookPath(t, "eapol_test", "Debian eapoltest: hack/eapol.sh install") // skip before starting anything
	ca, other := testpki.New(t, "OpenAAA test CA"), testpki.New(t, "Another CA")
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "ca.pem"), ca.PEM, 0o600))
	day := time.Now().Add(24 * time.Hour)
	// Many names make the server's first flight span several EAP fragments (1,014 octets each).
	var names []string
	for i := range 80 {
		names = append(names, fmt.Sprintf("node%02d.policing.test", i))
	}
	cert, key := ca.IssueUntil(t, "policing.test", 2, day, names...)
	writePEM(t, dir, "server", cert, key)
	cert, key = ca.Issue(t, "alice", 3)
	writePEM(t, dir, "alice", cert, key)
	cert, key = ca.IssueUntil(t, "alice", 4, time.Now().Add(-24*time.Hour))
	writePEM(t, dir, "expired", cert, key)
	cert, key = ca.Issue(t, "carol", 5)
	writePEM(t, dir, "carol", cert, key)
	cert, key = other.Issue(t, "alice", 2)
	writePEM(t, dir, "stranger", cert, key)
	return ca
}

// eapNode is a policing node offering every EAP method with the certificates of eapPKI;
// subscribers alice (clear-text password), bob (an NT hash of "bobpw") and dave (disabled).
func eapNode(t *testing.T, dir string) *Node {
	t.Helper()
	eapPKI(t, dir)
	return eapNodeWith(t, dir, "")
}

// eapNodeWith is eapNode on the files already in dir, with more configuration after the eap
// block's keys (indented: more eap keys).
func eapNodeWith(t *testing.T, dir, more string) *Node {
	t.Helper()
	return eapNodeAs(t, dir, "node-a", more)
}

// eapNodeAs is eapNodeWith with eap.nodeID node (several nodes on the files of one dir).
func eapNodeAs(t *testing.T, dir, node, more string) *Node {
	t.Helper()
	return edgeNode(t, dir, `
log: {level: debug}
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0"}
admin: {address: "127.0.0.1:0", tokenFile: {{dir}}/admin-token}
clients:
  # Message-Authenticator is not required of this NAS: EAP requires it anyway (RFC 3579).
  - {name: nas, address: 127.0.0.1, secretFile: {{dir}}/secret, requireMessageAuthenticator: false}
subscribers: {source: file, file: {{dir}}/subs.yaml}
eap:
  methods: [peap, ttls, tls, md5]
  certFile: {{dir}}/server.pem
  keyFile: {{dir}}/server.key
  caFile: {{dir}}/ca.pem
  nodeID: `+node+"\n"+more, "subscribers:\n  - {username: alice, password: alicepw}\n  - {username: bob, ntPassword: "+ntHashHex(t, "bobpw")+"}\n"+
		"  - {username: dave, password: davepw, disabled: true}\n")
}

// eapolTest runs eapol_test with the network block against the node: its output, and
// whether it reported SUCCESS.
func eapolTest(t *testing.T, n *Node, dir, network string, args ...string) (string, bool) {
	t.Helper()
	return runEapolTest(t, n.Addr("radius.authAddress"), dir, network, nil, args...)
}

func ntHashHex(t *testing.T, pw string) string {
	u, err := rfc2759.ToUTF16([]byte(pw))
	apptest.Check(t, err)
	return fmt.Sprintf("%X", rfc2759.NTPasswordHash(u))
}

// tlsNetwork is eapol_test's EAP-TLS network block with the client certificate dir/cert.pem.
func tlsNetwork(cert, extra string) string {
	return `key_mgmt=WPA-EAP
eap=TLS
identity="alice"
ca_cert="{{dir}}/ca.pem"
client_cert="{{dir}}/` + cert + `.pem"
private_key="{{dir}}/` + cert + `.key"
` + extra
}

// tunnelNetwork is eapol_test's PEAP or TTLS network block against the test's CA.
func tunnelNetwork(eap, phase2, user, password string) string {
	return eapoltest.Tunnel(eap, phase2, user, password, "{{dir}}/ca.pem")
}

// Every method against eapol_test (wpa_supplicant 2.10): success; eapol_test checks that
// the MPPE keys of the Access-Accept are the MSK it derived, so over TLS 1.3 this proves
// the RFC 9190 and RFC 9427 keying. The TLS methods negotiate the version asked for; PEAP
// and TTLS stay on TLS 1.2 unless the peer enables 1.3 (wpa_supplicant's default).
func TestEAPMethodsAgainstEapolTest(t *testing.T) {
	dir := t.TempDir()
	n := eapNode(t, dir)
	cases := []struct {
		name, network, tls string
		args               []string
	}{
		{"md5", `key_mgmt=IEEE8021X
eap=MD5
identity="alice"
password="alicepw"`, "", []string{"-n"}},
		{"tls-1.2", tlsNetwork("alice", "phase1=\"tls_disable_tlsv1_3=1\"\nfragment_size=200"), "1.2", nil},
		{"tls-1.3", tlsNetwork("alice", eapoltest.TLS13), "1.3", nil},
		{"peap-mschapv2", tunnelNetwork("PEAP", "MSCHAPV2", "alice", "alicepw") + "fragment_size=100", "1.2", nil},
		{"ttls-pap", tunnelNetwork("TTLS", "PAP", "alice", "alicepw"), "1.2", nil},
		{"ttls-mschapv2", tunnelNetwork("TTLS", "MSCHAPV2", "bob", "bobpw"), "1.2", nil},
		{"peap-mschapv2-tls-1.3", tunnelNetwork("PEAP", "MSCHAPV2", "alice", "alicepw") + eapoltest.TLS13 + "fragment_size=100", "1.3", nil},
		{"ttls-pap-tls-1.3", tunnelNetwork("TTLS", "PAP", "alice", "alicepw") + eapoltest.TLS13, "1.3", nil},
		{"ttls-mschapv2-tls-1.3", tunnelNetwork("TTLS", "MSCHAPV2", "bob", "bobpw") + eapoltest.TLS13, "1.3", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, ok := eapolTest(t, n, dir, c.network, c.args...)
			if os.Getenv("EAPDUMP") != "" {
				t.Log(out)
			}
			if !ok {
				t.Fatalf("eapol_test did not succeed:\n%s", out)
			}
			if c.args == nil && !strings.Contains(out, "MPPE keys OK: 1  mismatch: 0") {
				t.Fatalf("the Access-Accept's MPPE keys are not the peer's MSK:\n%s", out)
			}
			if got := tlsVersion(out); c.tls != "" && got != c.tls {
				t.Fatalf("TLS %q, want %s:\n%s", got, c.tls, out)
			}
		})
	}
}

// tlsVersion is the TLS version eapol_test's log reports last ("1.3"): the one negotiated
// (the first report, after the ClientHello, is the highest offered).
func tlsVersion(out string) string {
	const p = "Using TLS version TLSv"
	i := strings.LastIndex(out, p)
	if i < 0 {
		return ""
	}
	v, _, _ := strings.Cut(out[i+len(p):], "\n")
	return strings.TrimSpace(v)
}

// eap.tlsMaxVersion "1.2" caps every TLS method: a peer offering TLS 1.3 gets TLS 1.2, with
// its keying (the MPPE keys match).
func TestEAPTLSMaxVersion12(t *testing.T) {
	dir := t.TempDir()
	eapPKI(t, dir)
	n := eapNodeWith(t, dir, "  tlsMaxVersion: \"1.2\"\n")
	for _, network := range []string{
		tlsNetwork("alice", eapoltest.TLS13),
		tunnelNetwork("PEAP", "MSCHAPV2", "alice", "alicepw") + eapoltest.TLS13,
		tunnelNetwork("TTLS", "MSCHAPV2", "bob", "bobpw") + eapoltest.TLS13,
	} {
		out, ok := eapolTest(t, n, dir, network)
		if !ok || !strings.Contains(out, "MPPE keys OK: 1  mismatch: 0") || tlsVersion(out) != "1.2" {
			t.Fatalf("not a TLS 1.2 success (TLS %q):\n%s", tlsVersion(out), out)
		}
	}
}

// Every refusal ends in EAP-Failure (eapol_test reports FAILURE) and is counted by reason.
func TestEAPRefusalsAgainstEapolTest(t *testing.T) {
	dir := t.TempDir()
	n := eapNode(t, dir)
	cases := []struct {
		name, network, reason string
		args                  []string
	}{
		{"md5 wrong password", "key_mgmt=IEEE8021X\neap=MD5\nidentity=\"alice\"\npassword=\"nope\"", "wrong_password", []string{"-n"}},
		{"md5 unknown user", "key_mgmt=IEEE8021X\neap=MD5\nidentity=\"mallory\"\npassword=\"x\"", "unknown_user", []string{"-n"}},
		{"md5 ntPassword only", "key_mgmt=IEEE8021X\neap=MD5\nidentity=\"bob\"\npassword=\"bobpw\"", "no_clear_text_password", []string{"-n"}},
		{"peap wrong password", tunnelNetwork("PEAP", "MSCHAPV2", "alice", "nope"), "wrong_password", nil},
		{"peap unknown user", tunnelNetwork("PEAP", "MSCHAPV2", "mallory", "x"), "unknown_user", nil},
		{"ttls-pap wrong password", tunnelNetwork("TTLS", "PAP", "bob", "nope"), "wrong_password", nil},
		{"ttls-mschapv2 wrong password", tunnelNetwork("TTLS", "MSCHAPV2", "alice", "nope"), "wrong_password", nil},
		{"ttls unknown user", tunnelNetwork("TTLS", "PAP", "mallory", "x"), "unknown_user", nil},
		{"peap wrong password, TLS 1.3", tunnelNetwork("PEAP", "MSCHAPV2", "alice", "nope") + eapoltest.TLS13, "wrong_password", nil},
		{"ttls-pap wrong password, TLS 1.3", tunnelNetwork("TTLS", "PAP", "bob", "nope") + eapoltest.TLS13, "wrong_password", nil},
		{"ttls-mschapv2 wrong password, TLS 1.3", tunnelNetwork("TTLS", "MSCHAPV2", "alice", "nope") + eapoltest.TLS13, "wrong_password", nil},
		{"peap disabled subscriber", tunnelNetwork("PEAP", "MSCHAPV2", "dave", "davepw"), "policy_refused", nil},
		{"tls expired certificate", tlsNetwork("expired", ""), "tls_failed", nil},
		{"tls certificate from another CA", tlsNetwork("stranger", ""), "tls_failed", nil},
		{"tls certificate of no subscriber", tlsNetwork("carol", ""), "unknown_user", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			series := `openaaa_eap_rejects_total{reason="` + c.reason + `"}`
			before := testenv.Metric(t, n.Addr("admin.address").String(), series)
			out, ok := eapolTest(t, n, dir, c.network, c.args...)
			// After a TLS 1.2 handshake the peer only expects Success, so it reports the
			// EAP-Failure as an unexpected packet rather than CTRL-EVENT-EAP-FAILURE.
			if ok || !strings.Contains(out, "EAP: Received EAP-Failure") || !strings.Contains(out, "\nFAILURE") {
				t.Fatalf("eapol_test did not fail with EAP-Failure:\n%s", out)
			}
			if got := testenv.Metric(t, n.Addr("admin.address").String(), series); got != before+1 {
				t.Fatalf("%s = %v, want %v", series, got, before+1)
			}
		})
	}
}

// RFC 3579 §3.2: an Access-Request with EAP-Message and no or a wrong Message-Authenticator
// is silently discarded and counted, even from a NAS that need not send one otherwise; a
// node without eap.methods answers EAP with Access-Reject and EAP-Failure.
func TestEAPMessageAuthenticatorAndEAPOff(t *testing.T) {
	dir := t.TempDir()
	n := eapNode(t, dir)
	identity := func(secret string) *radius.Packet {
		p := radius.New(radius.CodeAccessRequest, []byte(secret))
		_ = rfc2865.UserName_SetString(p, "alice")
		p.Add(rfc2869.EAPMessage_Type, radius.Attribute{eap.CodeResponse, 1, 0, 10, eap.TypeIdentity, 'a', 'l', 'i', 'c', 'e'})
		return p
	}
	admin := n.Addr("admin.address").String()
	missing := `openaaa_radius_requests_dropped_total{reason="missing_message_authenticator"}`
	before := testenv.Metric(t, admin, missing)
	if _, err := exchange(t, n.Addr("radius.authAddress"), identity(radclientSecret), false); err == nil {
		t.Fatal("EAP without Message-Authenticator answered")
	}
	if got := testenv.Metric(t, admin, missing); got != before+1 {
		t.Fatalf("%s = %v, want %v", missing, got, before+1)
	}
	// Signed with another secret: the Message-Authenticator does not verify.
	wrong := `openaaa_radius_requests_dropped_total{reason="bad_message_authenticator"}`
	before = testenv.Metric(t, admin, wrong)
	p := identity("not-the-secret")
	b, err := p.Encode()
	apptest.Check(t, err)
	b, off := radiusx.AppendMessageAuthenticator(b)
	radiusx.SignRequest(b, off, p.Secret)
	conn, err := net.Dial("udp", n.Addr("radius.authAddress").String())
	apptest.Check(t, err)
	defer conn.Close()
	_, err = conn.Write(b)
	apptest.Check(t, err)
	testenv.Eventually(t, 10*time.Second, "the wrong Message-Authenticator counted", func() bool {
		return testenv.Metric(t, admin, wrong) == before+1
	})
	// The same Identity, properly signed: an Access-Challenge.
	reply, err := exchange(t, n.Addr("radius.authAddress"), identity(radclientSecret), true)
	apptest.Check(t, err)
	if reply.Code != radius.CodeAccessChallenge || rfc2865.SessionTimeout_Get(reply) != 30 || len(rfc2865.State_Get(reply)) == 0 {
		t.Fatalf("Identity answered %v", reply.Code)
	}

	off2 := startNode(t)
	p = identity(secret)
	reply, err = exchange(t, off2.Addr("radius.authAddress"), p, true)
	apptest.Check(t, err)
	if m, _ := rfc2869.EAPMessage_Lookup(reply); reply.Code != radius.CodeAccessReject || len(m) != 4 || m[0] != eap.CodeFailure {
		t.Fatalf("EAP off: %v %x", reply.Code, m)
	}
}

// The server certificate reloads with the mounted files: a new one is used by the next
// conversation; a broken one is refused and the one in force stays.
func TestEAPCertificateReload(t *testing.T) {
	dir := t.TempDir()
	n := eapNode(t, dir)
	peap := func(ca string) string {
		return strings.Replace(tunnelNetwork("PEAP", "MSCHAPV2", "alice", "alicepw"), "ca.pem", ca, 1)
	}
	ca2 := testpki.New(t, "Renewed CA")
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "ca2.pem"), ca2.PEM, 0o600))
	cert, key := ca2.Issue(t, "policing.test", 2)
	writePEM(t, dir, "server", cert, key)
	if ok, rejected := n.Reloader.Reload(); ok < 1 || rejected != 0 {
		t.Fatalf("reload: %d ok, %d rejected", ok, rejected)
	}
	if out, ok := eapolTest(t, n, dir, peap("ca2.pem")); !ok {
		t.Fatalf("the renewed certificate is not in force:\n%s", out)
	}
	if out, ok := eapolTest(t, n, dir, peap("ca.pem")); ok {
		t.Fatalf("the old certificate is still in force:\n%s", out)
	}
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "server.key"), []byte("not a key"), 0o600))
	if _, rejected := n.Reloader.Reload(); rejected < 1 {
		t.Fatal("a broken key was not refused")
	}
	if out, ok := eapolTest(t, n, dir, peap("ca2.pem")); !ok {
		t.Fatalf("the certificate in force was lost to a broken one:\n%s", out)
	}
}

// Revocation (eap.crlFile): a client certificate its CA's CRL lists is refused
// (certificate_revoked), over TLS 1.2 and 1.3, while another of the same CA succeeds; a new
// CRL on disk is in force for the next conversation, no restart; one past its nextUpdate
// refuses every certificate of its CA (crl_unavailable); a CRL signed by another key is
// refused, at a reload (the CRL in force stays) and at start.
func TestEAPCertificateRevocation(t *testing.T) {
	dir := t.TempDir()
	ca := eapPKI(t, dir)
	cert, key := ca.Issue(t, "alice", 6)
	writePEM(t, dir, "revoked", cert, key)
	cert, key = ca.Issue(t, "bob", 7)
	writePEM(t, dir, "bob", cert, key)
	crlFile := filepath.Join(dir, "ca.crl")
	day := time.Now().Add(24 * time.Hour)
	apptest.Check(t, os.WriteFile(crlFile, ca.CRL(t, 1, day, 6), 0o600))
	n := eapNodeWith(t, dir, "  crlFile: {{dir}}/ca.crl\nreload: {interval: 100ms}\n")
	refused := func(network, reason string) {
		t.Helper()
		series := `openaaa_eap_rejects_total{reason="` + reason + `"}`
		before := Metric(t, n, series)
		if out, ok := eapolTest(t, n, dir, network); ok || !strings.Contains(out, "EAP: Received EAP-Failure") {
			t.Fatalf("not refused with EAP-Failure:\n%s", out)
		}
		if got := Metric(t, n, series); got != before+1 {
			t.Fatalf("%s = %v, want %v", series, got, before+1)
		}
	}
	succeeds := func(network string) {
		t.Helper()
		if out, ok := eapolTest(t, n, dir, network); !ok {
			t.Fatalf("eapol_test did not succeed:\n%s", out)
		}
	}
	tls13 := eapoltest.TLS13
	refused(tlsNetwork("revoked", ""), "certificate_revoked")
	refused(tlsNetwork("revoked", tls13), "certificate_revoked")
	succeeds(tlsNetwork("alice", ""))
	succeeds(tlsNetwork("alice", tls13))

	reloads := func(result string) float64 {
		return Metric(t, n, `openaaa_config_reloads_total{kind="certificates",result="`+result+`"}`)
	}
	replace := func(crl []byte, result string) {
		t.Helper()
		before := reloads(result)
		apptest.WriteAtomically(t, crlFile, crl)
		testenv.Eventually(t, 20*time.Second, "the new CRL "+result, func() bool { return reloads(result) > before })
	}
	replace(ca.CRL(t, 2, day, 3, 6), "ok") // alice revoked after the start
	refused(tlsNetwork("alice", ""), "certificate_revoked")
	succeeds(tlsNetwork("bob", ""))
	replace(ca.ForgedCRL(t), "rejected")
	refused(tlsNetwork("alice", ""), "certificate_revoked")
	replace(ca.CRL(t, 3, time.Now().Add(-time.Minute)), "ok")
	refused(tlsNetwork("alice", ""), "crl_unavailable")

	apptest.WriteAtomically(t, crlFile, ca.ForgedCRL(t))
	cfg, err := config.Load(filepath.Join(dir, "policing.yaml"), nil, nil)
	apptest.Check(t, err)
	n2, err := Start(context.Background(), cfg, quietLog(), new(slog.LevelVar))
	if err == nil {
		_ = n2.Shutdown(context.Background())
		t.Fatal("started with a forged CRL")
	}
	if !strings.Contains(err.Error(), crlFile) {
		t.Fatalf("error %v does not name %s", err, crlFile)
	}
}
