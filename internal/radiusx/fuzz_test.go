package radiusx

import (
	"testing"

	"layeh.com/radius"
)

// FuzzVerify feeds arbitrary bytes to every raw-packet check: none may panic, and what
// they accept must be consistent with the framing checks.
func FuzzVerify(f *testing.F) {
	for _, code := range []radius.Code{radius.CodeAccessRequest, radius.CodeAccountingRequest, radius.CodeStatusServer} {
		b := encodeRequest(f, code, true, testSecret)
		f.Add(b)
		f.Add(b[:len(b)-5])
		f.Add(signReply(f, b, radius.CodeAccessAccept, true, testSecret))
	}
	f.Add([]byte{})
	f.Add(make([]byte, 20))
	f.Add([]byte{1, 0, 0, 22, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 80, 2})
	reqAuth := make([]byte, 16)
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := PacketLen(b)
		if err != nil {
			n = len(b)
		} else if n < HeaderLen || n > len(b) {
			t.Fatalf("PacketLen returned %d for %d octets", n, len(b))
		}
		pkt := b[:n]
		off, l, ferr := FindAttr(pkt, TypeMessageAuthenticator)
		if ferr == nil && off >= 0 && (off < HeaderLen+2 || off+l > len(pkt)) {
			t.Fatalf("FindAttr out of bounds: off %d len %d of %d", off, l, len(pkt))
		}
		present, merr := VerifyRequestMA(pkt, testSecret)
		if ferr != nil && merr == nil {
			t.Fatalf("VerifyRequestMA accepted a packet FindAttr rejects: %v", ferr)
		}
		if merr == nil && present && (ferr != nil || off < 0) {
			t.Fatal("VerifyRequestMA reports a Message-Authenticator FindAttr does not see")
		}
		_ = VerifyAccountingRequest(pkt, testSecret)
		_ = VerifyResponse(b, reqAuth, testSecret, true)
		_ = VerifyResponse(b, reqAuth, testSecret, false)
	})
}
