package radiusx

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"
)

var testSecret = []byte("xyzzy5461")

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refMA is an independent, straightforward Message-Authenticator: HMAC-MD5 over a copy of
// the packet whose Message-Authenticator is zeroed and whose authenticator field is auth.
func refMA(pkt []byte, auth []byte, secret []byte) []byte {
	c := append([]byte(nil), pkt...)
	if auth != nil {
		copy(c[4:20], auth)
	}
	for off := HeaderLen; off+1 < len(c); off += int(c[off+1]) {
		if c[off] == TypeMessageAuthenticator {
			copy(c[off+2:off+18], make([]byte, 16))
		}
		if c[off+1] < 2 {
			break
		}
	}
	m := hmac.New(md5.New, secret)
	m.Write(c)
	return m.Sum(nil)
}

// maValue returns the Message-Authenticator value of pkt.
func maValue(t testing.TB, pkt []byte) []byte {
	t.Helper()
	off, l, err := FindAttr(pkt, TypeMessageAuthenticator)
	if err != nil || off < 0 || l != 16 {
		t.Fatalf("no Message-Authenticator: off=%d len=%d err=%v", off, l, err)
	}
	return pkt[off : off+16]
}

func encodeRequest(t testing.TB, code radius.Code, withMA bool, secret []byte) []byte {
	t.Helper()
	p := radius.New(code, secret)
	rfc2865.UserName_SetString(p, "alice")
	rfc2865.NASIdentifier_SetString(p, "bng-1")
	if code == radius.CodeAccessRequest {
		if err := rfc2865.UserPassword_SetString(p, "wonderland"); err != nil {
			t.Fatal(err)
		}
	}
	if code == radius.CodeAccountingRequest {
		_ = rfc2866.AcctStatusType_Set(p, rfc2866.AcctStatusType_Value_Start)
		_ = rfc2866.AcctSessionID_SetString(p, "sess-1")
	}
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	off := -1
	if withMA {
		b, off = AppendMessageAuthenticator(b)
	}
	SignRequest(b, off, secret)
	return b
}

func TestPacketLen(t *testing.T) {
	hdr := func(total int, declared uint16) []byte {
		b := make([]byte, total)
		b[0] = 1
		binary.BigEndian.PutUint16(b[2:4], declared)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		want int
		err  bool
	}{
		{"empty", nil, 0, true},
		{"short header", make([]byte, 19), 0, true},
		{"exact header", hdr(20, 20), 20, false},
		{"declared below header", hdr(20, 19), 0, true},
		{"declared zero", hdr(40, 0), 0, true},
		{"declared beyond buffer", hdr(30, 31), 0, true},
		{"declared above max", hdr(4097, 4097), 0, true},
		{"max", hdr(4096, 4096), 4096, false},
		{"padding ignored", hdr(64, 26), 26, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := PacketLen(c.b)
			if c.err {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("PacketLen = %d, %v; want ErrMalformed", n, err)
				}
				return
			}
			if err != nil || n != c.want {
				t.Fatalf("PacketLen = %d, %v; want %d", n, err, c.want)
			}
		})
	}
}

func TestFindAttr(t *testing.T) {
	head := make([]byte, HeaderLen)
	pkt := func(attrs ...byte) []byte { return append(append([]byte(nil), head...), attrs...) }
	cases := []struct {
		name    string
		pkt     []byte
		typ     byte
		off, l  int
		wantErr error
	}{
		{"no attributes", pkt(), 1, -1, 0, nil},
		{"found first", pkt(1, 4, 'a', 'b', 32, 3, 'x'), 1, 22, 2, nil},
		{"found second", pkt(1, 4, 'a', 'b', 32, 3, 'x'), 32, 26, 1, nil},
		{"absent", pkt(1, 4, 'a', 'b'), 5, -1, 0, nil},
		{"empty value", pkt(1, 2, 32, 3, 'x'), 1, 22, 0, nil},
		{"repeated non-MA returns first", pkt(25, 3, 'a', 25, 3, 'b'), 25, 22, 1, nil},
		{"length below 2", pkt(1, 1, 'a'), 1, -1, 0, ErrMalformed},
		{"length zero", pkt(1, 0), 1, -1, 0, ErrMalformed},
		{"overruns packet", pkt(1, 5, 'a', 'b'), 1, -1, 0, ErrMalformed},
		{"lone type octet", pkt(1, 3, 'a', 7), 1, -1, 0, ErrMalformed},
		{"malformed after match", pkt(1, 3, 'a', 2, 9), 1, -1, 0, ErrMalformed},
		{"attribute type 0", pkt(1, 3, 'a', 0, 3, 'x'), 1, -1, 0, ErrMalformed},
		{"attribute type 0 looked for", pkt(0, 2), 0, -1, 0, ErrMalformed},
		{"two Message-Authenticators", pkt(append(append([]byte{80, 18}, make([]byte, 16)...), append([]byte{80, 18}, make([]byte, 16)...)...)...), 80, -1, 0, ErrDuplicateMessageMA},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			off, l, err := FindAttr(c.pkt, c.typ)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				if off != -1 {
					t.Fatalf("off = %d on error, want -1", off)
				}
				return
			}
			if err != nil || off != c.off || l != c.l {
				t.Fatalf("FindAttr = (%d, %d, %v), want (%d, %d, nil)", off, l, err, c.off, c.l)
			}
		})
	}
}

// RFC 2865 §7.1: the PAP Access-Request for "nemo"/"arctangent" and its Access-Accept,
// secret "xyzzy5461".
const (
	rfc2865Request = `01 00 00 38 0f 40 3f 94 73 97 80 57 bd 83 d5 cb
		98 f4 22 7a 01 06 6e 65 6d 6f 02 12 0d be 70 8d
		93 d4 13 ce 31 96 e4 3f 78 2a 0a ee 04 06 c0 a8
		01 10 05 06 00 00 00 03`
	rfc2865Accept = `02 00 00 26 86 fe 22 0e 76 24 ba 2a 10 05 f6 bf
		9b 55 e0 b2 06 06 00 00 00 01 0f 06 00 00 00 00
		0e 06 c0 a8 01 03`
)

func TestRFC2865Vector(t *testing.T) {
	req := unhex(t, rfc2865Request)
	resp := unhex(t, rfc2865Accept)
	if n, err := PacketLen(req); err != nil || n != len(req) {
		t.Fatalf("PacketLen(request) = %d, %v", n, err)
	}
	p, err := radius.Parse(req, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if pw := rfc2865.UserPassword_GetString(p); pw != "arctangent" {
		t.Fatalf("decoded password %q, want arctangent (vector transcribed wrong?)", pw)
	}
	if err := VerifyResponse(resp, req[4:20], testSecret, false); err != nil {
		t.Fatalf("RFC 2865 Access-Accept does not verify: %v", err)
	}
	if err := VerifyResponse(resp, req[4:20], testSecret, true); !errors.Is(err, ErrBadMessageAuth) {
		t.Fatalf("requireMA on a reply without Message-Authenticator: %v, want ErrBadMessageAuth", err)
	}
	if err := VerifyResponse(resp, req[4:20], []byte("xyzzy5462"), false); !errors.Is(err, ErrBadAuthenticator) {
		t.Fatalf("wrong secret: %v, want ErrBadAuthenticator", err)
	}
	// Our signer must reproduce the RFC's response authenticator byte for byte.
	mine := append([]byte(nil), resp...)
	copy(mine[4:20], req[4:20])
	SignResponse(mine, -1, testSecret, req[0])
	if !bytes.Equal(mine, resp) {
		t.Fatalf("SignResponse = % x\nwant           % x", mine[4:20], resp[4:20])
	}
	// A request authenticator that is not the request's does not verify.
	other := append([]byte(nil), req[4:20]...)
	other[0] ^= 1
	if err := VerifyResponse(resp, other, testSecret, false); !errors.Is(err, ErrBadAuthenticator) {
		t.Fatalf("reply to another request: %v, want ErrBadAuthenticator", err)
	}
	// Access-Request without Message-Authenticator: nothing to verify.
	if present, err := VerifyRequestMA(req, testSecret); present || err != nil {
		t.Fatalf("VerifyRequestMA = %v, %v; want false, nil", present, err)
	}
}

func TestSignRequestVerifies(t *testing.T) {
	for _, code := range []radius.Code{radius.CodeAccessRequest, radius.CodeStatusServer, radius.CodeAccountingRequest,
		radius.CodeCoARequest, radius.CodeDisconnectRequest} {
		t.Run(code.String(), func(t *testing.T) {
			b := encodeRequest(t, code, true, testSecret)
			if n, err := PacketLen(b); err != nil || n != len(b) {
				t.Fatalf("header length not updated: %d, %v (len %d)", n, err, len(b))
			}
			present, err := VerifyRequestMA(b, testSecret)
			if !present || err != nil {
				t.Fatalf("VerifyRequestMA = %v, %v", present, err)
			}
			var auth []byte // as in the packet
			zeroed := code == radius.CodeAccountingRequest || code == radius.CodeCoARequest || code == radius.CodeDisconnectRequest
			if zeroed {
				auth = make([]byte, 16)
				if err := VerifyAccountingRequest(b, testSecret); err != nil {
					t.Fatalf("VerifyAccountingRequest: %v", err)
				}
				// Cross-check with layeh.com/radius's independent request-authenticator check.
				if !radius.IsAuthenticRequest(b, testSecret) {
					t.Fatal("layeh.com/radius rejects the request authenticator")
				}
			}
			if want := refMA(b, auth, testSecret); !bytes.Equal(maValue(t, b), want) {
				t.Fatalf("Message-Authenticator = %x, reference %x", maValue(t, b), want)
			}
			if _, err := VerifyRequestMA(b, []byte("other")); !errors.Is(err, ErrBadMessageAuth) {
				t.Fatalf("wrong secret: %v, want ErrBadMessageAuth", err)
			}
			// layeh.com/radius must parse what we signed, attributes intact.
			p, err := radius.Parse(b, testSecret)
			if err != nil {
				t.Fatal(err)
			}
			if rfc2865.UserName_GetString(p) != "alice" {
				t.Fatal("User-Name lost")
			}
		})
	}
}

func TestSignRequestWithoutMA(t *testing.T) {
	b := encodeRequest(t, radius.CodeAccountingRequest, false, testSecret)
	if present, err := VerifyRequestMA(b, testSecret); present || err != nil {
		t.Fatalf("VerifyRequestMA = %v, %v; want absent", present, err)
	}
	if err := VerifyAccountingRequest(b, testSecret); err != nil {
		t.Fatal(err)
	}
	// Same bytes as layeh.com/radius's own Encode.
	p, err := radius.Parse(b, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, b) {
		t.Fatalf("SignRequest differs from layeh Encode:\n% x\n% x", b, enc)
	}
	// Access-Request without MA: authenticator untouched.
	a := encodeRequest(t, radius.CodeAccessRequest, false, testSecret)
	p2, _ := radius.Parse(a, testSecret)
	if rfc2865.UserPassword_GetString(p2) != "wonderland" {
		t.Fatal("SignRequest changed the Access-Request authenticator")
	}
}

func TestVerifyAccountingRequestOnLayehEncoding(t *testing.T) {
	p := radius.New(radius.CodeAccountingRequest, testSecret)
	_ = rfc2866.AcctSessionID_SetString(p, "x")
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyAccountingRequest(b, testSecret); err != nil {
		t.Fatalf("layeh-encoded Accounting-Request: %v", err)
	}
	if err := VerifyAccountingRequest(b, []byte("nope")); !errors.Is(err, ErrBadAuthenticator) {
		t.Fatalf("wrong secret: %v", err)
	}
	if err := VerifyAccountingRequest(b[:19], testSecret); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short: %v", err)
	}
}

// Every single-bit change to a signed request is detected.
func TestRequestTamperingDetected(t *testing.T) {
	for _, code := range []radius.Code{radius.CodeAccessRequest, radius.CodeAccountingRequest, radius.CodeStatusServer} {
		b := encodeRequest(t, code, true, testSecret)
		for i := range b {
			if i == 2 || i == 3 {
				continue // length: a different framing, checked by PacketLen/FindAttr
			}
			c := append([]byte(nil), b...)
			c[i] ^= 0x01
			if i == 0 {
				// A code change must still be caught by one of the checks.
				c[0] = b[0]
				c[1] ^= 0x80
			}
			present, err := VerifyRequestMA(c, testSecret)
			acctErr := error(nil)
			if code == radius.CodeAccountingRequest {
				acctErr = VerifyAccountingRequest(c, testSecret)
			}
			// A packet signed with a Message-Authenticator that now lacks one is caught too:
			// callers require it (Access-Request by default, Status-Server always).
			if err == nil && present && acctErr == nil {
				t.Fatalf("%v: flipping octet %d not detected (present=%v)", code, i, present)
			}
		}
	}
}

func TestVerifyRequestMAMalformed(t *testing.T) {
	b := encodeRequest(t, radius.CodeAccessRequest, false, testSecret)
	// A 4-octet Message-Authenticator: present but cannot verify.
	short := append(append([]byte(nil), b...), TypeMessageAuthenticator, 6, 1, 2, 3, 4)
	binary.BigEndian.PutUint16(short[2:4], uint16(len(short)))
	if present, err := VerifyRequestMA(short, testSecret); !present || !errors.Is(err, ErrBadMessageAuth) {
		t.Fatalf("short MA: %v, %v", present, err)
	}
	// Two Message-Authenticators.
	two, _ := AppendMessageAuthenticator(append([]byte(nil), b...))
	two, off := AppendMessageAuthenticator(two)
	if _, err := VerifyRequestMA(two, testSecret); !errors.Is(err, ErrDuplicateMessageMA) {
		t.Fatalf("two MA: %v", err)
	}
	_ = off
	// Broken attribute framing.
	bad := append(append([]byte(nil), b...), 1, 7, 'x')
	binary.BigEndian.PutUint16(bad[2:4], uint16(len(bad)))
	if _, err := VerifyRequestMA(bad, testSecret); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad framing: %v", err)
	}
}

func TestAppendMessageAuthenticator(t *testing.T) {
	b := encodeRequest(t, radius.CodeAccessRequest, false, testSecret)
	n0 := len(b)
	b2, off := AppendMessageAuthenticator(b)
	if len(b2) != n0+18 || off != n0+2 || b2[n0] != TypeMessageAuthenticator || b2[n0+1] != 18 {
		t.Fatalf("layout: len %d off %d attr % x", len(b2), off, b2[n0:n0+2])
	}
	if int(binary.BigEndian.Uint16(b2[2:4])) != len(b2) {
		t.Fatal("length field not updated")
	}
	if !bytes.Equal(b2[off:off+16], make([]byte, 16)) {
		t.Fatal("placeholder not zero")
	}
}

// signReply builds a reply to req the way radiusd does.
func signReply(t testing.TB, req []byte, code radius.Code, withMA bool, secret []byte) []byte {
	t.Helper()
	q, err := radius.Parse(req, secret)
	if err != nil {
		t.Fatal(err)
	}
	r := q.Response(code)
	rfc2865.ReplyMessage_SetString(r, "hello")
	b, err := r.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	off := -1
	if withMA {
		b, off = AppendMessageAuthenticator(b)
	}
	SignResponse(b, off, secret, req[0])
	return b
}

func TestSignResponseVerifies(t *testing.T) {
	zero := make([]byte, 16)
	cases := []struct {
		name    string
		reqCode radius.Code
		reply   radius.Code
		maOverZ bool // Message-Authenticator over a zero authenticator
	}{
		{"Access-Accept", radius.CodeAccessRequest, radius.CodeAccessAccept, false},
		{"Access-Reject", radius.CodeAccessRequest, radius.CodeAccessReject, false},
		{"Access-Challenge", radius.CodeAccessRequest, radius.CodeAccessChallenge, false},
		{"Accounting-Response", radius.CodeAccountingRequest, radius.CodeAccountingResponse, true},
		{"Status-Server on auth", radius.CodeStatusServer, radius.CodeAccessAccept, false},
		{"Status-Server on acct", radius.CodeStatusServer, radius.CodeAccountingResponse, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := encodeRequest(t, c.reqCode, true, testSecret)
			reqAuth := req[4:20]
			b := signReply(t, req, c.reply, true, testSecret)
			if err := VerifyResponse(b, reqAuth, testSecret, true); err != nil {
				t.Fatalf("VerifyResponse: %v", err)
			}
			if !radius.IsAuthenticResponse(b, req, testSecret) {
				t.Fatal("layeh.com/radius rejects the response authenticator")
			}
			maAuth := reqAuth
			if c.maOverZ {
				maAuth = zero
			}
			if want := refMA(b, maAuth, testSecret); !bytes.Equal(maValue(t, b), want) {
				t.Fatalf("Message-Authenticator = %x, reference %x", maValue(t, b), want)
			}
			if err := VerifyResponse(b, reqAuth, []byte("other"), true); err == nil {
				t.Fatal("wrong secret verified")
			}
			// Every single-bit change is caught.
			for i := range b {
				if i == 2 || i == 3 {
					continue
				}
				x := append([]byte(nil), b...)
				x[i] ^= 0x04
				if err := VerifyResponse(x, reqAuth, testSecret, true); err == nil {
					t.Fatalf("flipping octet %d not detected", i)
				}
			}
			// Octets past the declared length are padding.
			padded := append(append([]byte(nil), b...), 0xde, 0xad)
			if err := VerifyResponse(padded, reqAuth, testSecret, true); err != nil {
				t.Fatalf("padded reply: %v", err)
			}
		})
	}
}

// An Accounting-Response whose Message-Authenticator was computed over the request
// authenticator (RFC 3579 reading) is not what FreeRADIUS sends for accounting; the
// verifier accepts it only as an answer to Status-Server.
func TestAccountingResponseMAOverRequestAuth(t *testing.T) {
	req := encodeRequest(t, radius.CodeAccountingRequest, true, testSecret)
	b := signReply(t, req, radius.CodeAccountingResponse, false, testSecret)
	b, off := AppendMessageAuthenticator(b[:])
	copy(b[4:20], req[4:20])
	mac := refMA(b, req[4:20], testSecret)
	copy(b[off:], mac)
	h := md5.New()
	h.Write(b)
	h.Write(testSecret)
	copy(b[4:20], h.Sum(nil))
	if err := VerifyResponse(b, req[4:20], testSecret, true); err != nil {
		t.Fatalf("Status-Server style Accounting-Response: %v", err)
	}
	// And an Access-Accept whose MA was computed over zeros is rejected.
	areq := encodeRequest(t, radius.CodeAccessRequest, true, testSecret)
	a := signReply(t, areq, radius.CodeAccessAccept, false, testSecret)
	a, aoff := AppendMessageAuthenticator(a)
	copy(a[4:20], areq[4:20])
	copy(a[aoff:], refMA(a, make([]byte, 16), testSecret))
	h.Reset()
	h.Write(a)
	h.Write(testSecret)
	copy(a[4:20], h.Sum(nil))
	if err := VerifyResponse(a, areq[4:20], testSecret, true); !errors.Is(err, ErrBadMessageAuth) {
		t.Fatalf("Access-Accept with MA over zeros: %v, want ErrBadMessageAuth", err)
	}
}

func TestVerifyResponseWithoutMA(t *testing.T) {
	req := encodeRequest(t, radius.CodeAccessRequest, false, testSecret)
	b := signReply(t, req, radius.CodeAccessReject, false, testSecret)
	if err := VerifyResponse(b, req[4:20], testSecret, false); err != nil {
		t.Fatalf("optional MA: %v", err)
	}
	if err := VerifyResponse(b, req[4:20], testSecret, true); !errors.Is(err, ErrBadMessageAuth) {
		t.Fatalf("required MA missing: %v", err)
	}
	if err := VerifyResponse(b[:10], req[4:20], testSecret, false); !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestResponseMAAuth(t *testing.T) {
	auth := bytes.Repeat([]byte{7}, 16)
	if got := responseMAAuth(codeAccountingResponse, 4, auth); !bytes.Equal(got, zeroAuth) {
		t.Fatal("Accounting-Response to Accounting-Request must use zeros")
	}
	if got := responseMAAuth(codeAccountingResponse, codeStatusServer, auth); !bytes.Equal(got, auth) {
		t.Fatal("Accounting-Response to Status-Server must use the request authenticator")
	}
	if got := responseMAAuth(2, 1, auth); !bytes.Equal(got, auth) {
		t.Fatal("Access-Accept must use the request authenticator")
	}
}

// The pooled HMACs keyed by secret must not leak state between secrets or calls.
func TestMACPoolIsolation(t *testing.T) {
	req := encodeRequest(t, radius.CodeAccessRequest, true, []byte("secret-a"))
	for i := 0; i < 50; i++ {
		if _, err := VerifyRequestMA(req, []byte("secret-b")); !errors.Is(err, ErrBadMessageAuth) {
			t.Fatal("secret-b verified a secret-a packet")
		}
		if _, err := VerifyRequestMA(req, []byte("secret-a")); err != nil {
			t.Fatalf("iteration %d: %v", i, err)
		}
	}
}

func BenchmarkVerifyRequestMA(b *testing.B) {
	req := encodeRequest(b, radius.CodeAccessRequest, true, testSecret)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := VerifyRequestMA(req, testSecret); err != nil {
			b.Fatal(err)
		}
	}
}
