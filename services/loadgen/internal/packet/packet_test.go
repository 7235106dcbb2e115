package packet

import (
	"crypto/md5"
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
