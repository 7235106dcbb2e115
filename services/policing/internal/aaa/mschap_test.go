package aaa

import (
	"bytes"
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/vendors/microsoft"

	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// RFC 2759 §9.2 and RFC 3079 §3.5.3 (128-bit keys): the peer "User" with "clientPass".
var (
	rfcAuthChallenge = unhex("5B5D7C7D7B3F2F3E3C2C602132262628")
	rfcPeerChallenge = unhex("21402324255E262A28295F2B3A337C7E")
	rfcNTResponse    = unhex("82309ECD8D708B5EA08FAA3981CD83544233114A3D85D6DF")
	rfcAuthResponse  = "S=407A5589115FD0D6209F510FE9C04566932CDA56"
	rfcSendKey128    = unhex("8B7CDC149B993A1BA118CB153F56DCCB")
	rfcNTHash        = "44EBBA8D5312B8D611474411F56989AE" // PasswordHash of "clientPass"
)

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// msCHAP2Response is the attribute's value: Ident, Flags, Peer-Challenge, Reserved, Response.
func msCHAP2Response(ident byte, peer, nt []byte) []byte {
	v := []byte{ident, 0}
	v = append(v, peer...)
	v = append(v, make([]byte, 8)...)
	return append(v, nt...)
}

func msCHAPRequest(user string, challenge, response []byte) func(p *radius.Packet) {
	return func(p *radius.Packet) {
		rfc2865.UserName_SetString(p, user)
		if challenge != nil {
			_ = microsoft.MSCHAPChallenge_Set(p, challenge)
		}
		if response != nil {
			_ = microsoft.MSCHAP2Response_Set(p, response)
		}
	}
}

func rfcSubscribers() *fakeSource {
	return &fakeSource{subs: map[string]*subscriber.Subscriber{
		"User":         {Username: "User", Password: "clientPass"},
		`EXAMPLE\User`: {Username: `EXAMPLE\User`, Password: "clientPass"},
	}}
}

// The RFC's own exchange is accepted with the RFC's authenticator response and send key.
func TestMSCHAPv2AcceptRFCVectors(t *testing.T) {
	// The domain is not hashed; in HashOnly, "User" has the NT hash of "clientPass" and no
	// clear text.
	for _, user := range []string{"User", `EXAMPLE\User`, `HashOnly`} {
		t.Run(user, func(t *testing.T) {
			h := authHandler(rfcSubscribers())
			name := user
			if user == "HashOnly" {
				h.Subscribers.(*fakeSource).subs["User"] = &subscriber.Subscriber{Username: "User", NTPassword: rfcNTHash}
				name = "User"
			}
			r := newRequest(radius.CodeAccessRequest, msCHAPRequest(name, rfcAuthChallenge, msCHAP2Response(7, rfcPeerChallenge, rfcNTResponse)))
			w := &recWriter{}
			h.ServeRADIUS(w, r)
			reply := w.replies[0]
			if reply.Code != radius.CodeAccessAccept {
				t.Fatalf("reply %v, want Access-Accept", reply.Code)
			}
			if got, want := microsoft.MSCHAP2Success_Get(reply), append([]byte{7}, rfcAuthResponse...); !bytes.Equal(got, want) {
				t.Fatalf("MS-CHAP2-Success %q, want %q", got, want)
			}
			send, err := microsoft.MSMPPESendKey_Lookup(reply, r.Packet)
			if err != nil || !bytes.Equal(send, rfcSendKey128) {
				t.Fatalf("MS-MPPE-Send-Key %X (%v), want %X", send, err, rfcSendKey128)
			}
			recv, err := microsoft.MSMPPERecvKey_Lookup(reply, r.Packet)
			if err != nil || len(recv) != 16 || bytes.Equal(recv, send) {
				t.Fatalf("MS-MPPE-Recv-Key %X (%v): want 16 bytes other than the send key", recv, err)
			}
			if p := microsoft.MSMPPEEncryptionPolicy_Get(reply); p != 1 { // Encryption-Allowed
				t.Fatalf("MS-MPPE-Encryption-Policy %d", p)
			}
		})
	}
}

func TestMSCHAPv2Rejects(t *testing.T) {
	good := msCHAP2Response(9, rfcPeerChallenge, rfcNTResponse)
	v1 := func(p *radius.Packet) {
		msCHAPRequest("User", rfcAuthChallenge, nil)(p)
		_ = microsoft.MSCHAPResponse_Set(p, make([]byte, 50))
	}
	cases := []struct {
		name   string
		build  func(p *radius.Packet)
		reason string
	}{
		{"wrong password", msCHAPRequest("User", rfcAuthChallenge, msCHAP2Response(9, rfcPeerChallenge, make([]byte, 24))), reasonBadPassword},
		{"another challenge", msCHAPRequest("User", rfcPeerChallenge, good), reasonBadPassword},
		{"another user name", msCHAPRequest(`EXAMPLE\user`, rfcAuthChallenge, good), reasonUnknownUser},
		{"short challenge", msCHAPRequest("User", rfcAuthChallenge[:15], good), reasonMSCHAPMalformed},
		{"long response", msCHAPRequest("User", rfcAuthChallenge, append(good, 0)), reasonMSCHAPMalformed},
		{"no challenge", msCHAPRequest("User", nil, good), reasonMSCHAPMalformed},
		{"challenge only", msCHAPRequest("User", rfcAuthChallenge, nil), reasonMSCHAPMalformed},
		{"MS-CHAPv1", v1, reasonMSCHAPv1},
		{"with User-Password", func(p *radius.Packet) {
			msCHAPRequest("User", rfcAuthChallenge, good)(p)
			_ = rfc2865.UserPassword_SetString(p, "clientPass")
		}, reasonTwoPassword},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := authHandler(rfcSubscribers())
			r := newRequest(radius.CodeAccessRequest, c.build)
			if d := h.decide(r); d.Accept || d.Reason != c.reason {
				t.Fatalf("decision accept=%v reason %q, want reject %q", d.Accept, d.Reason, c.reason)
			}
			w := &recWriter{}
			h.ServeRADIUS(w, r)
			reply := w.replies[0]
			if reply.Code != radius.CodeAccessReject {
				t.Fatalf("reply %v", reply.Code)
			}
			if len(microsoft.MSCHAP2Success_Get(reply)) != 0 || len(microsoft.MSMPPESendKey_Get(reply, r.Packet)) != 0 {
				t.Fatal("a Reject carries MS-CHAP2-Success or a key")
			}
			// A wrong password tells the peer why (RFC 2759 §6), in the peer's ident.
			e := microsoft.MSCHAPError_GetString(reply)
			if c.reason == reasonBadPassword {
				if !strings.HasPrefix(e, "\x09E=691 R=0 C=") || !strings.Contains(e, " V=3") {
					t.Fatalf("MS-CHAP-Error %q", e)
				}
			} else if e != "" {
				t.Fatalf("MS-CHAP-Error %q on a %s", e, c.reason)
			}
		})
	}
}

// sharedReply returns the same reply slice, with room to grow, on every Accept.
type sharedReply struct {
	policy.Default
	reply radius.Attributes
}

func (s *sharedReply) Authorize(context.Context, *radius.Packet, *subscriber.Subscriber) policy.AuthDecision {
	return policy.AuthDecision{Accept: true, Reply: s.reply}
}

// The keys of one Accept never land in the policy's reply of the next.
func TestMSCHAPv2DoesNotWriteIntoThePolicysReply(t *testing.T) {
	shared := make(radius.Attributes, 1, 16)
	shared[0] = &radius.AVP{Type: rfc2865.ReplyMessage_Type, Attribute: radius.Attribute("hi")}
	h := &Auth{Subscribers: rfcSubscribers(), Policy: &sharedReply{reply: shared}, Log: quiet(), Metrics: testMetrics}
	r := newRequest(radius.CodeAccessRequest, msCHAPRequest("User", rfcAuthChallenge, msCHAP2Response(1, rfcPeerChallenge, rfcNTResponse)))
	if d := h.decide(r); !d.Accept || len(d.Reply) < 5 {
		t.Fatalf("decision %+v", d)
	}
	if full := shared[:cap(shared)]; full[1] != nil {
		t.Fatalf("the policy's reply was written into: %v", full[1])
	}
}

// A subscriber with an NT hash and no clear text: PAP is checked against the hash, CHAP
// cannot be.
func TestNTPasswordOnly(t *testing.T) {
	sub := &subscriber.Subscriber{Username: "User", NTPassword: rfcNTHash}
	cases := []struct {
		name  string
		build func(p *radius.Packet)
		want  string
	}{
		{"PAP right", func(p *radius.Packet) { _ = rfc2865.UserPassword_SetString(p, "clientPass") }, ""},
		{"PAP wrong", func(p *radius.Packet) { _ = rfc2865.UserPassword_SetString(p, "clientpass") }, reasonBadPassword},
		{"CHAP", func(p *radius.Packet) {
			_ = rfc2865.CHAPPassword_Set(p, chapResponse(7, "clientPass", p.Authenticator[:]))
		}, reasonNoClearText},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkPassword(newRequest(radius.CodeAccessRequest, c.build).Packet, sub); got != c.want {
				t.Fatalf("checkPassword = %q, want %q", got, c.want)
			}
		})
	}
}
