package packet

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/openaaa/openaaa/internal/radiusx"
)

func TestUserPasswordLong(t *testing.T) {
	secret := []byte("xyzzy5461")
	var b Builder
	auth := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	b.Begin(CodeAccessRequest, 7, auth)
	pw := "a-password-longer-than-16-octets"
	b.UserPassword(pw, secret)
	pkt := b.Finish(secret)
	off, l, err := radiusx.FindAttr(pkt, AttrUserPassword)
	if err != nil || l != 32 {
		t.Fatalf("User-Password length %d err %v", l, err)
	}
	// RFC 2865 §5.2: c(i) = p(i) xor MD5(S + c(i-1)), c(0) = authenticator.
	enc := pkt[off : off+l]
	prev := auth[:]
	var out []byte
	for i := 0; i < l; i += 16 {
		h := md5.Sum(append(append([]byte(nil), secret...), prev...))
		for j := 0; j < 16; j++ {
			out = append(out, enc[i+j]^h[j])
		}
		prev = enc[i : i+16]
	}
	if string(out[:len(pw)]) != pw {
		t.Fatalf("decrypted %q", out)
	}
	if present, err := radiusx.VerifyRequestMA(pkt, secret); !present || err != nil {
		t.Fatalf("Message-Authenticator: present %v err %v", present, err)
	}
}

func TestAccountingSigned(t *testing.T) {
	secret := []byte("s")
	var b Builder
	b.Begin(CodeAccountingRequest, 9, [16]byte{})
	b.Uint32(AttrAcctStatusType, AcctStart)
	b.String(AttrAcctSessionID, "abc")
	pkt := b.Finish(secret)
	if err := radiusx.VerifyAccountingRequest(pkt, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := radiusx.VerifyRequestMA(pkt, secret); err != nil {
		t.Fatal(err)
	}
}

func TestParseReplyWrongID(t *testing.T) {
	req := make([]byte, 20)
	req[0], req[1] = CodeAccessRequest, 1
	reply := make([]byte, 20)
	reply[0], reply[1], reply[3] = CodeAccessAccept, 2, 20
	if _, err := ParseReply(reply, req, []byte("s"), false); !errors.Is(err, ErrWrongID) {
		t.Fatalf("err %v", err)
	}
}

// An EAP packet longer than an attribute goes out in 253-octet EAP-Messages, and an
// Access-Challenge's EAP-Messages come back joined, with its State.
func TestEAPChallenge(t *testing.T) {
	secret := []byte("s")
	eap := make([]byte, 600)
	for i := range eap {
		eap[i] = byte(i)
	}
	var req Builder
	req.Begin(CodeAccessRequest, 4, [16]byte{9})
	req.EAPMessage(eap)
	reqPkt := append([]byte(nil), req.Finish(secret)...)
	if off, l, _ := radiusx.FindAttr(reqPkt, AttrEAPMessage); off < 0 || l != 253 {
		t.Fatalf("first EAP-Message of %d octets", l)
	}

	var b Builder
	b.Begin(CodeAccessChallenge, 4, [16]byte(reqPkt[4:20]))
	b.EAPMessage(eap)
	b.Bytes(AttrState, []byte("state-1"))
	binary.BigEndian.PutUint16(b.buf[2:4], uint16(len(b.buf)))
	pkt, off := radiusx.AppendMessageAuthenticator(b.buf)
	radiusx.SignResponse(pkt, off, secret, CodeAccessRequest)
	r, err := ParseReply(pkt, reqPkt, secret, true)
	if err != nil || r.Code != CodeAccessChallenge || !bytes.Equal(r.EAP, eap) || string(r.State) != "state-1" {
		t.Fatalf("reply %+v, err %v", r, err)
	}
}
