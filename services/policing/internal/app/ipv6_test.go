package app

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
	"github.com/openaaa/openaaa/services/policing/internal/ctl"
)

// v6Node starts a node listening on ::1 only, its one client an IPv6-only NAS (::1) whose
// CoA receiver listens on coaPort.
func v6Node(t *testing.T, coaPort int, subs string) *Node {
	t.Helper()
	return edgeNode(t, t.TempDir(), fmt.Sprintf(`
log: {level: debug, format: text}
radius: {authAddress: "[::1]:0", acctAddress: "[::1]:0", workers: 8}
admin: {address: "127.0.0.1:0", tokenFile: {{dir}}/admin-token}
clients:
  - {name: bng6, address: "::1", secretFile: {{dir}}/secret, coaPort: %d}
subscribers: {source: file, file: {{dir}}/subs.yaml}
coa: {timeout: 500ms, retries: 2, resendAfter: 1m}
`, coaPort), subs)
}

// An IPv6-only BNG (radclient over ::1) starts a session with a delegated prefix; the admin
// API finds it by any address inside the prefix and by the prefix, and a Disconnect by such
// an address reaches the NAS's CoA receiver (FreeRADIUS on ::1) carrying NAS-IPv6-Address
// (RFC 5176 §3). Before: ?ip= did not exist and ?framedIp= took IPv4 framed addresses only.
func TestIPv6OnlyNASDisconnectByDelegatedAddress(t *testing.T) {
	nas := newFreeRADIUS(t, "nas6", "--role", "coa", "--secret", radclientSecret, "--address", "::1", "--client", "::1/128")
	n := v6Node(t, nas.port, edgeSubs)
	out := apptest.Radclient(t, n.Addr("radius.acctAddress").String(), "acct", radclientSecret, 1, 2,
		"Acct-Status-Type = Start", `Acct-Session-Id = "V6-1"`, `User-Name = "alice"`, "NAS-IPv6-Address = ::1",
		"Delegated-IPv6-Prefix = 2001:db8:100:ab00::/56", "Framed-IPv6-Prefix = 2001:db8:0:7::/64",
		"Framed-Interface-Id = 0011:22ff:fe33:4455", "Message-Authenticator = 0x00")
	if !strings.Contains(out, "Received Accounting-Response") {
		t.Fatalf("no Accounting-Response:\n%s", out)
	}
	// The admin API's JSON, as an operator's script reads it.
	find := func(q string) []map[string]any {
		t.Helper()
		var r struct{ Sessions []map[string]any }
		getJSON(t, n, "/api/v1/sessions?ip="+url.QueryEscape(q), &r)
		return r.Sessions
	}
	for _, q := range []string{"2001:db8:100:abcd::1", "2001:db8:100:ab00::/56", "2001:db8:100:ab40::/58", "2001:db8:0:7::99"} {
		got := find(q)
		if len(got) != 1 || got[0]["acctSessionId"] != "V6-1" {
			t.Fatalf("sessions?ip=%s = %+v, want V6-1", q, got)
		}
		for k, v := range map[string]string{"nas": "::1", "delegatedIpv6Prefix": "2001:db8:100:ab00::/56",
			"framedIpv6Prefix": "2001:db8:0:7::/64", "nasIpv6Address": "::1", "framedInterfaceId": "0011:22ff:fe33:4455"} {
			if got[0][k] != v {
				t.Errorf("session %s = %v, want %s", k, got[0][k], v)
			}
		}
	}
	if got := find("2001:db8:100:ac00::1"); len(got) != 0 {
		t.Fatalf("an address outside the prefix found %+v", got)
	}

	code, r := postCoA(t, n, "/api/v1/disconnect?ip="+url.QueryEscape("2001:db8:100:ab12::99"))
	if code != 200 || len(r.Results) != 1 || r.Results[0].Result != "ack" || !strings.HasPrefix(r.Results[0].Target, "[::1]:") {
		t.Fatalf("disconnect by IPv6 address: %d %+v", code, r)
	}
	testenv.Eventually(t, 10*time.Second, "Disconnect-Request in the receiver's detail", func() bool {
		return strings.Contains(nas.detail(), `Acct-Session-Id = "V6-1"`)
	})
	// The receiver listens on ::1 only: what it logged came over IPv6.
	d := nas.detail()
	for _, w := range []string{"Packet-Type = Disconnect-Request", "NAS-IPv6-Address = ::1", `User-Name = "alice"`,
		"Framed-IPv6-Prefix = 2001:db8:0:7::/64"} {
		if !strings.Contains(d, w) {
			t.Errorf("receiver's record lacks %q:\n%s", w, d)
		}
	}
	if strings.Contains(d, "NAS-IP-Address") {
		t.Errorf("an IPv6-only NAS named by NAS-IP-Address:\n%s", d)
	}

	// The CLI by prefix: exit 0 on ACK; an address no session covers: 3.
	runCtl := func(args ...string) (int, string) {
		var o, e bytes.Buffer
		rc := ctl.Main(context.Background(), append(args, "--admin", "http://"+n.Addr("admin.address").String(), "--token-file", n.Config.Admin.TokenFile), &o, &e)
		return rc, o.String() + e.String()
	}
	if rc, out := runCtl("disconnect", "--ip", "2001:db8:100:ab00::/56"); rc != 0 || !strings.Contains(out, `"ack"`) {
		t.Fatalf("ctl disconnect --ip PREFIX: rc %d\n%s", rc, out)
	}
	if rc, out := runCtl("coa", "--ip", "2001:db8:100:ab00::1", "--attr", "Session-Timeout=600"); rc != 0 {
		t.Fatalf("ctl coa --ip: rc %d\n%s", rc, out)
	}
	if rc, out := runCtl("disconnect", "--ip", "2001:db8:999::1"); rc != 3 {
		t.Fatalf("ctl disconnect of an address no session covers: rc %d\n%s", rc, out)
	}
	testenv.Eventually(t, 10*time.Second, "CoA-Request in the receiver's detail", func() bool {
		return strings.Contains(nas.detail(), "Session-Timeout = 600")
	})
}

// A profile hands out IPv6 reply attributes, and framedIPAddress takes an IPv6 address (an
// IPv6-only subscriber), as radclient sees the Access-Accept. Before: the subscriber file
// was refused (framedIPAddress "is not an IPv4 address"; no IPv6 profile fields).
func TestIPv6ProfileAccessAccept(t *testing.T) {
	needFreeRADIUS(t)
	n := v6Node(t, 3799, `
subscribers:
  - username: v6only
    password: pw
    profile:
      framedIPAddress: "2001:db8:0:7::1"
      framedIPv6Prefix: "2001:db8:0:7::/64"
      delegatedIPv6Prefix: "2001:db8:100:ab00::/56"
      framedIPv6Pool: wan6
      dnsServerIPv6Addresses: ["2001:db8::53", "2001:db8::5353"]
`)
	out := apptest.Radclient(t, n.Addr("radius.authAddress").String(), "auth", radclientSecret, 1, 2,
		`User-Name = "v6only"`, `User-Password = "pw"`, "NAS-IPv6-Address = ::1", "Message-Authenticator = 0x00")
	mustContainAll(t, out, "Received Access-Accept", "Framed-IPv6-Address = 2001:db8:0:7::1",
		"Framed-IPv6-Prefix = 2001:db8:0:7::/64", "Delegated-IPv6-Prefix = 2001:db8:100:ab00::/56",
		`Framed-IPv6-Pool = "wan6"`, "DNS-Server-IPv6-Address = 2001:db8::53", "DNS-Server-IPv6-Address = 2001:db8::5353")
	if strings.Contains(out, "Framed-IP-Address") {
		t.Fatalf("an IPv6 address sent as Framed-IP-Address:\n%s", out)
	}
}

func mustContainAll(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("radclient output lacks %q:\n%s", w, out)
		}
	}
}
