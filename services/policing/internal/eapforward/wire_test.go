package eapforward

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"
	"layeh.com/radius/vendors/microsoft"

	"github.com/openaaa/openaaa/internal/radiusx"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/mschapv2"
)

var (
	nasSecret   = []byte("nas-secret")
	interSecret = []byte("inter-node-secret")
)

func nasRequest(t *testing.T, state []byte) *radius.Packet {
	t.Helper()
	p := radius.New(radius.CodeAccessRequest, nasSecret)
	must(t, rfc2865.UserName_SetString(p, "anonymous"))
	p.Add(rfc2869.EAPMessage_Type, radius.Attribute{2, 7, 0, 6, 25, 0})
	if state != nil {
		p.Add(rfc2865.State_Type, radius.Attribute(state))
	}
	p.Add(radiusx.TypeProxyState, radius.Attribute("nas-proxy-state"))
	must(t, rfc2865.UserPassword_SetString(p, "hidden with the NAS's secret"))
	p.Add(TypeForwardedClient, radius.Attribute("forged"))
	p.Add(radiusx.TypeMessageAuthenticator, make(radius.Attribute, 16))
	return p
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The forwarded request: the NAS's attributes less the hop's own and the hidden ones, the
// NAS's client name once, our Proxy-State once, our Identifier and authenticator, and a
// Message-Authenticator that verifies under the inter-node secret only.
func TestRequest(t *testing.T) {
	nas := nasRequest(t, []byte("OA\x01\x06node-bxxxxxxxxxxxxxxxx"))
	auth := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	wire, err := Request(nas, "wifi-controller", interSecret, 42, auth, []byte("ourstate"))
	must(t, err)
	if present, err := radiusx.VerifyRequestMA(wire, interSecret); !present || err != nil {
		t.Fatalf("Message-Authenticator under the inter-node secret: present %v, %v", present, err)
	}
	if _, err := radiusx.VerifyRequestMA(wire, nasSecret); err == nil {
		t.Fatal("the Message-Authenticator verifies under the NAS's secret")
	}
	p, err := radius.Parse(wire, interSecret)
	must(t, err)
	if p.Code != radius.CodeAccessRequest || p.Identifier != 42 || p.Authenticator != auth {
		t.Fatalf("header: %v %d %x", p.Code, p.Identifier, p.Authenticator)
	}
	if name, ok := ClientName(p); !ok || name != "wifi-controller" || count(p, TypeForwardedClient) != 1 {
		t.Fatalf("client name: %q %v (%d)", name, ok, count(p, TypeForwardedClient))
	}
	if ps, _ := p.Lookup(radiusx.TypeProxyState); count(p, radiusx.TypeProxyState) != 1 || string(ps) != "ourstate" {
		t.Fatalf("Proxy-State: %q", ps)
	}
	if _, ok := p.Lookup(rfc2865.UserPassword_Type); ok {
		t.Fatal("User-Password carried")
	}
	if rfc2865.UserName_GetString(p) != "anonymous" || !bytes.Equal(rfc2865.State_Get(p), rfc2865.State_Get(nas)) ||
		!bytes.Equal(rfc2869.EAPMessage_Get(p), rfc2869.EAPMessage_Get(nas)) {
		t.Fatal("the NAS's attributes are not carried as they were")
	}
	if _, err := Request(nas, "", interSecret, 1, auth, []byte("s")); err == nil {
		t.Fatal("no client name accepted")
	}
}

// The owner's reply relayed: its attributes in order, less Message-Authenticator and
// Proxy-State, the MPPE keys readable by the NAS with its secret and request authenticator
// (and not with the owner's encryption), the encryption policy and types as they were.
func TestReplyReencryptsKeys(t *testing.T) {
	send, recv := bytes.Repeat([]byte{0xa5}, 32), bytes.Repeat([]byte{0x5a}, 32)
	fwdAuth := [16]byte{9, 9, 9}
	owner := &radius.Packet{Code: radius.CodeAccessAccept, Secret: interSecret, Authenticator: fwdAuth}
	owner.Add(radiusx.TypeMessageAuthenticator, make(radius.Attribute, 16))
	owner.Add(rfc2869.EAPMessage_Type, radius.Attribute{3, 7, 0, 4})
	must(t, rfc2865.FilterID_SetString(owner, "wifi-users"))
	must(t, mschapv2.AddMPPEKeys(owner, send, recv))
	owner.Add(radiusx.TypeProxyState, radius.Attribute("ourstate"))
	nas := nasRequest(t, nil)

	attrs, err := Reply(owner, fwdAuth, nas)
	must(t, err)
	out := &radius.Packet{Code: radius.CodeAccessAccept, Secret: nasSecret, Authenticator: nas.Authenticator, Attributes: attrs}
	if got, err := microsoft.MSMPPESendKey_Lookup(out, nas); err != nil || !bytes.Equal(got, send) {
		t.Fatalf("Send-Key for the NAS: %x, %v", got, err)
	}
	if got, err := microsoft.MSMPPERecvKey_Lookup(out, nas); err != nil || !bytes.Equal(got, recv) {
		t.Fatalf("Recv-Key for the NAS: %x, %v", got, err)
	}
	if owned, _ := microsoft.MSMPPESendKey_Lookup(&radius.Packet{Secret: interSecret, Attributes: attrs}, &radius.Packet{Authenticator: fwdAuth}); bytes.Equal(owned, send) {
		t.Fatal("the relayed key still decrypts under the inter-node secret")
	}
	for _, typ := range []radius.Type{radiusx.TypeMessageAuthenticator, radiusx.TypeProxyState} {
		if _, ok := out.Lookup(typ); ok {
			t.Fatalf("attribute %d relayed", typ)
		}
	}
	if rfc2865.FilterID_GetString(out) != "wifi-users" || !bytes.Equal(rfc2869.EAPMessage_Get(out), []byte{3, 7, 0, 4}) ||
		microsoft.MSMPPEEncryptionPolicy_Get(out) != 1 || microsoft.MSMPPEEncryptionTypes_Get(out) != 6 {
		t.Fatal("the owner's other attributes are not relayed")
	}
	if keys, err := microsoft.MSMPPESendKey_Gets(out, nas); err != nil || len(keys) != 1 {
		t.Fatalf("%d Send-Keys, %v", len(keys), err)
	}

	// A challenge without keys goes through as it is.
	ch := &radius.Packet{Code: radius.CodeAccessChallenge, Secret: interSecret, Authenticator: fwdAuth}
	ch.Add(rfc2865.State_Type, radius.Attribute("OA\x01\x06node-b0123456789abcdef"))
	attrs, err = Reply(ch, fwdAuth, nas)
	must(t, err)
	if len(attrs) != 1 || attrs[0].Type != rfc2865.State_Type {
		t.Fatalf("challenge: %v", attrs)
	}
}

// Only a kind-1 State of another node is forwarded, and never a request that arrived
// forwarded.
func TestOwner(t *testing.T) {
	f := &Forwarder{Self: "node-a"}
	state := func(kind byte, node string) []byte {
		return append([]byte{'O', 'A', kind, byte(len(node))}, append([]byte(node), bytes.Repeat([]byte{7}, 16)...)...)
	}
	cases := []struct {
		name  string
		state []byte
		fwd   bool
		want  string
	}{
		{"another node's, in memory", state(1, "node-b"), false, "node-b"},
		{"this node's", state(1, "node-a"), false, ""},
		{"in the store", state(2, "node-b"), false, ""},
		{"not ours", []byte("someone else's state"), false, ""},
		{"no State", nil, false, ""},
		{"arrived forwarded", state(1, "node-b"), true, ""},
	}
	for _, c := range cases {
		p := nasRequest(t, c.state)
		p.Del(TypeForwardedClient)
		if c.fwd {
			p.Add(TypeForwardedClient, radius.Attribute("nas"))
		}
		if got, ok := f.Owner(p); got != c.want || ok != (c.want != "") {
			t.Errorf("%s: %q %v, want %q", c.name, got, ok, c.want)
		}
	}
}

// An owner not registered, or one that does not answer within Timeout × (Retries+1), is an
// error of its kind; the retransmissions are the same datagram.
func TestExchangeFailures(t *testing.T) {
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	must(t, err)
	defer silent.Close()
	f := &Forwarder{Self: "node-a", Secret: interSecret, Timeout: 100 * time.Millisecond, Retries: 1, Log: quiet(), Metrics: NewMetrics(metrics.Factory{}),
		Lookup: func(_ context.Context, node string) (string, error) {
			if node == "node-b" {
				return silent.LocalAddr().String(), nil
			}
			return "", errors.New("not found")
		}}
	nas := nasRequest(t, nil)
	if _, _, err := f.Exchange(context.Background(), nas, "nas", "node-c"); !errors.Is(err, ErrOwnerUnknown) {
		t.Fatalf("unknown owner: %v", err)
	}
	got := make(chan [][]byte, 1)
	go func() {
		var seen [][]byte
		buf := make([]byte, 4096)
		_ = silent.SetReadDeadline(time.Now().Add(2 * time.Second))
		for len(seen) < 2 {
			n, _, err := silent.ReadFrom(buf)
			if err != nil {
				break
			}
			seen = append(seen, append([]byte(nil), buf[:n]...))
		}
		got <- seen
	}()
	start := time.Now()
	if _, _, err := f.Exchange(context.Background(), nas, "nas", "node-b"); !errors.Is(err, ErrTimeout) {
		t.Fatalf("silent owner: %v", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
		t.Fatalf("gave up after %v, want about 200ms", d)
	}
	seen := <-got
	if len(seen) != 2 || !bytes.Equal(seen[0], seen[1]) {
		t.Fatalf("%d datagrams, want the same one twice", len(seen))
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func count(p *radius.Packet, typ radius.Type) int {
	n := 0
	for _, a := range p.Attributes {
		if a.Type == typ {
			n++
		}
	}
	return n
}
