// Package radiusx holds the wire-level RADIUS helpers that layeh.com/radius leaves out and
// that both the policing server and the load generator need: Message-Authenticator
// (RFC 3579 §3.2, RFC 2869 §5.14) and request/response authenticator checks on raw bytes.
package radiusx

import (
	"crypto/hmac"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"hash"
	"sync"
)

const (
	// HeaderLen is the length of the fixed RADIUS header.
	HeaderLen = 20
	// TypeMessageAuthenticator is attribute 80.
	TypeMessageAuthenticator = 80
	// TypeProxyState is attribute 33.
	TypeProxyState = 33
	maLen          = 18 // type + length + 16 bytes of HMAC-MD5
)

// Errors returned by the checks below; callers map them to drop reasons.
var (
	ErrMalformed          = errors.New("radius: malformed packet")
	ErrBadAuthenticator   = errors.New("radius: request authenticator does not verify")
	ErrBadMessageAuth     = errors.New("radius: Message-Authenticator does not verify")
	ErrDuplicateMessageMA = errors.New("radius: more than one Message-Authenticator")
)

// PacketLen validates the header of b and returns the packet length declared in it.
// Octets past the declared length are padding and must be ignored (RFC 2865 §3).
func PacketLen(b []byte) (int, error) {
	if len(b) < HeaderLen {
		return 0, ErrMalformed
	}
	n := int(binary.BigEndian.Uint16(b[2:4]))
	if n < HeaderLen || n > 4096 || n > len(b) {
		return 0, ErrMalformed
	}
	return n, nil
}

// FindAttr walks the attributes of a length-checked packet and returns the offset of the
// value of the first attribute of type t, or -1. It also validates the attribute framing:
// an attribute of type 0 (no such attribute: types start at 1) makes the packet malformed,
// as FreeRADIUS treats it ("Invalid attribute 0").
func FindAttr(pkt []byte, t byte) (int, int, error) {
	off, found, count := HeaderLen, -1, 0
	vlen := 0
	for off < len(pkt) {
		if len(pkt)-off < 2 {
			return -1, 0, ErrMalformed
		}
		l := int(pkt[off+1])
		if l < 2 || off+l > len(pkt) || pkt[off] == 0 {
			return -1, 0, ErrMalformed
		}
		if pkt[off] == t {
			count++
			if found < 0 {
				found, vlen = off+2, l-2
			}
		}
		off += l
	}
	if t == TypeMessageAuthenticator && count > 1 {
		return -1, 0, ErrDuplicateMessageMA
	}
	return found, vlen, nil
}

var hmacPool sync.Map // secret string -> *sync.Pool of hash.Hash

func macFor(secret []byte) hash.Hash {
	p, ok := hmacPool.Load(string(secret))
	if !ok {
		s := append([]byte(nil), secret...)
		p, _ = hmacPool.LoadOrStore(string(secret), &sync.Pool{New: func() any { return hmac.New(md5.New, s) }})
	}
	h := p.(*sync.Pool).Get().(hash.Hash)
	h.Reset()
	return h
}

func releaseMac(secret []byte, h hash.Hash) {
	if p, ok := hmacPool.Load(string(secret)); ok {
		p.(*sync.Pool).Put(h)
	}
}

// messageAuth computes HMAC-MD5 over pkt with the Message-Authenticator value (at off)
// taken as zeros and the authenticator field replaced by auth (nil: as in pkt).
func messageAuth(pkt []byte, off int, auth []byte, secret []byte) [16]byte {
	var zero [16]byte
	h := macFor(secret)
	h.Write(pkt[:4])
	if auth != nil {
		h.Write(auth)
	} else {
		h.Write(pkt[4:20])
	}
	h.Write(pkt[20:off])
	h.Write(zero[:])
	h.Write(pkt[off+16:])
	var out [16]byte
	h.Sum(out[:0])
	releaseMac(secret, h)
	return out
}

// VerifyRequestMA checks the Message-Authenticator of a request. present reports whether
// the attribute exists; err is ErrBadMessageAuth when it exists and does not verify.
// For Accounting-Request and CoA/Disconnect-Request the authenticator field counts as zeros
// (RFC 5176 §3.3, RFC 3579 §3.2).
func VerifyRequestMA(pkt []byte, secret []byte) (present bool, err error) {
	off, vlen, err := FindAttr(pkt, TypeMessageAuthenticator)
	if err != nil {
		return false, err
	}
	if off < 0 {
		return false, nil
	}
	if vlen != 16 {
		return true, ErrBadMessageAuth
	}
	var auth []byte
	switch pkt[0] {
	case 4, 40, 43: // Accounting-Request, Disconnect-Request, CoA-Request
		auth = make([]byte, 16)
	}
	want := messageAuth(pkt, off, auth, secret)
	if !hmac.Equal(want[:], pkt[off:off+16]) {
		return true, ErrBadMessageAuth
	}
	return true, nil
}

// VerifyAccountingRequest checks the request authenticator of an Accounting-Request (and of
// CoA/Disconnect-Request): MD5(code|id|len|16 zero octets|attributes|secret).
func VerifyAccountingRequest(pkt []byte, secret []byte) error {
	if len(pkt) < HeaderLen {
		return ErrMalformed
	}
	sum := authenticator(pkt, zeroAuth, secret)
	if !hmac.Equal(sum[:], pkt[4:20]) {
		return ErrBadAuthenticator
	}
	return nil
}

// VerifyResponse checks a reply's response authenticator against the request authenticator
// reqAuth, and its Message-Authenticator when present (requireMA: it must be present).
func VerifyResponse(pkt []byte, reqAuth []byte, secret []byte, requireMA bool) error {
	n, err := PacketLen(pkt)
	if err != nil {
		return err
	}
	pkt = pkt[:n]
	sum := authenticator(pkt, reqAuth, secret)
	if !hmac.Equal(sum[:], pkt[4:20]) {
		return ErrBadAuthenticator
	}
	off, vlen, err := FindAttr(pkt, TypeMessageAuthenticator)
	if err != nil {
		return err
	}
	if off < 0 {
		if requireMA {
			return ErrBadMessageAuth
		}
		return nil
	}
	if vlen != 16 {
		return ErrBadMessageAuth
	}
	want := messageAuth(pkt, off, responseMAAuth(pkt[0], 0, reqAuth), secret)
	if hmac.Equal(want[:], pkt[off:off+16]) {
		return nil
	}
	if pkt[0] == codeAccountingResponse { // a reply to Status-Server uses the request's vector
		want = messageAuth(pkt, off, reqAuth, secret)
		if hmac.Equal(want[:], pkt[off:off+16]) {
			return nil
		}
	}
	return ErrBadMessageAuth
}

const (
	codeAccountingResponse = 5
	codeStatusServer       = 12
)

var zeroAuth = make([]byte, 16)

// responseMAAuth is the authenticator a reply's Message-Authenticator is computed over.
// RFC 3579 says the request authenticator; for Accounting-Response FreeRADIUS (and so the
// NAS ecosystem) uses sixteen zero octets unless it answers a Status-Server, and clients
// reject anything else. We follow the deployed behaviour.
func responseMAAuth(replyCode, reqCode byte, reqAuth []byte) []byte {
	if replyCode == codeAccountingResponse && reqCode != codeStatusServer {
		return zeroAuth
	}
	return reqAuth
}

// AppendMessageAuthenticator appends an empty Message-Authenticator to an encoded packet
// (header length updated) and returns the new slice and the value offset, for Sign*.
func AppendMessageAuthenticator(pkt []byte) ([]byte, int) {
	off := len(pkt) + 2
	pkt = append(pkt, TypeMessageAuthenticator, maLen)
	pkt = append(pkt, make([]byte, 16)...)
	binary.BigEndian.PutUint16(pkt[2:4], uint16(len(pkt)))
	return pkt, off
}

// SignResponse finalises an encoded reply whose authenticator field holds the request
// authenticator: it fills the Message-Authenticator at maOff (if >= 0), then computes
// the response authenticator MD5(code|id|len|reqAuth|attributes|secret) in place.
// reqCode is the code of the request answered.
func SignResponse(pkt []byte, maOff int, secret []byte, reqCode byte) {
	fillMessageAuth(pkt, maOff, responseMAAuth(pkt[0], reqCode, pkt[4:20]), secret)
	sum := authenticator(pkt, pkt[4:20], secret)
	copy(pkt[4:20], sum[:])
}

// SignRequest finalises an encoded request. For Access-Request and Status-Server the
// authenticator field must already hold the random request authenticator and only the
// Message-Authenticator is filled. For Accounting, CoA and Disconnect requests the
// Message-Authenticator is computed over a zero authenticator, then the request
// authenticator MD5(code|id|len|zeros|attributes|secret) is written.
func SignRequest(pkt []byte, maOff int, secret []byte) {
	switch pkt[0] {
	case 4, 40, 43:
		copy(pkt[4:20], zeroAuth)
		fillMessageAuth(pkt, maOff, nil, secret)
		sum := authenticator(pkt, zeroAuth, secret)
		copy(pkt[4:20], sum[:])
	default:
		fillMessageAuth(pkt, maOff, nil, secret)
	}
}

// fillMessageAuth writes the Message-Authenticator at maOff, if >= 0, computed with the
// authenticator field taken as auth (nil: as in pkt).
func fillMessageAuth(pkt []byte, maOff int, auth, secret []byte) {
	if maOff >= 0 {
		mac := messageAuth(pkt, maOff, auth, secret)
		copy(pkt[maOff:], mac[:])
	}
}

// authenticator is MD5(code|id|length|auth|attributes|secret): a response authenticator
// with auth the request's, an Accounting/CoA/Disconnect request authenticator with zeros.
func authenticator(pkt, auth, secret []byte) [16]byte {
	h := md5.New()
	h.Write(pkt[:4])
	h.Write(auth)
	h.Write(pkt[20:])
	h.Write(secret)
	var sum [16]byte
	h.Sum(sum[:0])
	return sum
}
