package main_test

// BlastRADIUS defences and reply addressing, checked with FreeRADIUS's radclient (which
// verifies the Message-Authenticator of every reply and matches a reply to its request by
// the address the request went to).

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/internal/testenv"
)

// firstAttribute returns the first attribute line radclient printed for the reply.
func firstAttribute(t *testing.T, out, received string) string {
	t.Helper()
	_, after, ok := strings.Cut(out, received)
	if !ok {
		t.Fatalf("no %q in radclient output:\n%s", received, out)
	}
	lines := strings.Split(after, "\n")
	for _, l := range lines[1:] {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

func TestRadclientMessageAuthenticatorFirst(t *testing.T) {
	n := startPolicing(t, "")
	out := radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, `Proxy-State = 0x01`, ma)
	if a := firstAttribute(t, out, "Received Access-Accept"); !strings.HasPrefix(a, "Message-Authenticator") {
		t.Fatalf("first attribute of the Access-Accept is %q, want Message-Authenticator:\n%s", a, out)
	}
	mustContain(t, out, "Proxy-State = 0x01")
	out = radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "guess"`, ma)
	if a := firstAttribute(t, out, "Received Access-Reject"); !strings.HasPrefix(a, "Message-Authenticator") {
		t.Fatalf("first attribute of the Access-Reject is %q:\n%s", a, out)
	}
	for _, port := range []string{n.auth, n.acct} {
		out = radclient(t, port, "status", testSecret, ma)
		mustContain(t, out, "Received", "Message-Authenticator")
	}
	out = radclient(t, n.acct, "acct", testSecret, acctLines("Start", "MA-1")...)
	mustContain(t, out, "Received Accounting-Response")
}

func TestRadclientLimitProxyState(t *testing.T) {
	n := startPolicing(t, "", "--set", "clients.0.requireMessageAuthenticator=false")
	// The BlastRADIUS shape: Proxy-State, no Message-Authenticator.
	out := radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, `Proxy-State = 0x41`)
	mustNotContain(t, out, "Received Access")
	if got := metric(t, n, `openaaa_radius_requests_dropped_total{reason="proxy_state_without_message_authenticator"}`); got != 1 {
		t.Fatalf("proxy_state_without_message_authenticator drops = %v, want 1", got)
	}
	// Without Proxy-State, or with Message-Authenticator, the same client is answered.
	mustContain(t, radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`), "Received Access-Accept")
	mustContain(t, radclient(t, n.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, `Proxy-State = 0x41`, ma),
		"Received Access-Accept", "Proxy-State = 0x41")
	// limitProxyState: false answers it (FreeRADIUS's limit_proxy_state = no).
	n2 := startPolicing(t, "", "--set", "clients.0.requireMessageAuthenticator=false", "--set", "radius.limitProxyState=false")
	mustContain(t, radclient(t, n2.auth, "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, `Proxy-State = 0x41`),
		"Received Access-Accept")
}

// RFC 2865 §5.44: never both User-Password and CHAP-Password (FreeRADIUS 3.2.1 accepts it when
// both are right; the RFC rules here).
func TestRadclientBothPasswordsRejected(t *testing.T) {
	n := startPolicing(t, "")
	out := radclient(t, n.auth, "auth", testSecret, `User-Name = "bob"`, `User-Password = "builder"`, `CHAP-Password = "builder"`, ma)
	mustContain(t, out, "Received Access-Reject")
}

// A node listening on the wildcard address answers from the address the request was sent
// to: radclient, sending to 127.0.0.2 (a second loopback address), takes a reply only from
// there. Several addresses per key work too.
func TestRadclientReplyFromTheAddressItWasSentTo(t *testing.T) {
	authPort, acctPort := testenv.FreeUDPPort(t), testenv.FreeUDPPort(t)
	n := startPolicing(t, "", "--set", fmt.Sprintf("radius.authAddress=0.0.0.0:%d", authPort),
		"--set", fmt.Sprintf("radius.acctAddress=0.0.0.0:%d", acctPort))
	out := radclient(t, fmt.Sprintf("127.0.0.2:%d", authPort), "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, ma)
	mustContain(t, out, "Received Access-Accept")
	out = radclient(t, fmt.Sprintf("127.0.0.2:%d", acctPort), "acct", testSecret, acctLines("Start", "VIP-1")...)
	mustContain(t, out, "Received Accounting-Response")
	_ = n

	p := testenv.FreeUDPPort(t)
	m := startPolicing(t, "", "--set", fmt.Sprintf("radius.authAddress=127.0.0.2:%d,127.0.0.3:%d", p, p))
	for _, to := range []string{"127.0.0.2", "127.0.0.3"} {
		mustContain(t, radclient(t, fmt.Sprintf("%s:%d", to, p), "auth", testSecret, `User-Name = "alice"`, `User-Password = "wonderland"`, ma),
			"Received Access-Accept")
	}
	_ = m
}
