// Package responder is a minimal in-process RADIUS server for aaa-loadgen's tests: it checks
// what the generator sends (authenticators, Message-Authenticator, PAP and CHAP passwords),
// records every request and answers Access-Accept with a Framed-IP-Address, Access-Reject
// for unknown users or wrong passwords, and Accounting-Response.
package responder

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/openaaa/openaaa/internal/radiusx"
)

// Request is what the responder saw.
type Request struct {
	Port       string // "auth" or "acct"
	Code       byte
	ID         byte
	User       string
	StatusType uint32
	SessionID  string
	FramedIP   [4]byte
	// Octets counters (64-bit, with gigawords).
	InOctets, OutOctets uint64
	OutGigawords        uint32
	Error               string // why it was rejected or dropped, if it was
}

// Responder listens on two loopback UDP ports.
type Responder struct {
	Secret []byte
	// Passwords of the known users (nil: accept everyone).
	Passwords map[string]string
	// FramedIP returns the address for an Access-Accept (nil: none).
	FramedIP func(user string) [4]byte
	// Drop, if set, is asked for each request (n counts its transmissions: 1 for the first);
	// true: no answer.
	Drop func(r Request, n int) bool
	// CorruptMA sends replies with a wrong Message-Authenticator.
	CorruptMA bool
	// NoMA leaves Message-Authenticator out of replies.
	NoMA bool

	auth, acct *net.UDPConn
	mu         sync.Mutex
	reqs       []Request
	seen       map[[17]byte]int
	wg         sync.WaitGroup
}

// Start listens on 127.0.0.1 (ports chosen by the system).
func (r *Responder) Start() error {
	var err error
	if r.auth, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err != nil {
		return err
	}
	if r.acct, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err != nil {
		r.auth.Close()
		return err
	}
	r.seen = map[[17]byte]int{}
	r.wg.Add(2)
	go r.serve(r.auth, "auth")
	go r.serve(r.acct, "acct")
	return nil
}

// AuthAddr and AcctAddr are the listening addresses.
func (r *Responder) AuthAddr() string { return r.auth.LocalAddr().String() }
func (r *Responder) AcctAddr() string { return r.acct.LocalAddr().String() }

// Target is AuthAddr/acctport, as aaa-loadgen's --target takes it.
func (r *Responder) Target() string {
	return fmt.Sprintf("%s/%d", r.AuthAddr(), r.acct.LocalAddr().(*net.UDPAddr).Port)
}

// Close stops the responder.
func (r *Responder) Close() {
	r.auth.Close()
	r.acct.Close()
	r.wg.Wait()
}

// Configure changes the responder's settings while it runs.
func (r *Responder) Configure(fn func(*Responder)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r)
}

// Requests returns a copy of what was received, in arrival order.
func (r *Responder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

func (r *Responder) serve(c *net.UDPConn, port string) {
	defer r.wg.Done()
	buf := make([]byte, 4096)
	for {
		n, from, err := c.ReadFromUDP(buf)
		if err != nil {
			return
		}
		pkt := append([]byte(nil), buf[:n]...)
		r.mu.Lock()
		req, reply := r.handle(pkt, port)
		var key [17]byte
		key[0] = pkt[1]
		copy(key[1:], pkt[4:20])
		r.seen[key]++
		tx := r.seen[key]
		if tx == 1 {
			r.reqs = append(r.reqs, req)
		}
		drop := reply == nil || (r.Drop != nil && r.Drop(req, tx))
		r.mu.Unlock()
		if drop {
			continue
		}
		c.WriteToUDP(reply, from)
	}
}

func attrs(pkt []byte, fn func(t byte, v []byte)) error {
	for off := radiusx.HeaderLen; off < len(pkt); {
		if len(pkt)-off < 2 || pkt[off+1] < 2 || off+int(pkt[off+1]) > len(pkt) {
			return radiusx.ErrMalformed
		}
		fn(pkt[off], pkt[off+2:off+int(pkt[off+1])])
		off += int(pkt[off+1])
	}
	return nil
}

func (r *Responder) handle(pkt []byte, port string) (Request, []byte) {
	req := Request{Port: port}
	n, err := radiusx.PacketLen(pkt)
	if err != nil {
		req.Error = err.Error()
		return req, nil
	}
	pkt = pkt[:n]
	req.Code, req.ID = pkt[0], pkt[1]
	present, err := radiusx.VerifyRequestMA(pkt, r.Secret)
	if err != nil || !present {
		req.Error = "message-authenticator: missing or bad"
		return req, nil
	}
	var pap, chap []byte
	var inGW, outGW uint32
	var in, out uint32
	attrs(pkt, func(t byte, v []byte) {
		switch t {
		case 1:
			req.User = string(v)
		case 2:
			pap = v
		case 3:
			chap = v
		case 8:
			copy(req.FramedIP[:], v)
		case 40:
			req.StatusType = binary.BigEndian.Uint32(v)
		case 42:
			in = binary.BigEndian.Uint32(v)
		case 43:
			out = binary.BigEndian.Uint32(v)
		case 44:
			req.SessionID = string(v)
		case 52:
			inGW = binary.BigEndian.Uint32(v)
		case 53:
			outGW = binary.BigEndian.Uint32(v)
		}
	})
	req.InOctets = uint64(inGW)<<32 | uint64(in)
	req.OutOctets = uint64(outGW)<<32 | uint64(out)
	req.OutGigawords = outGW
	var code byte
	var replyAttrs []byte
	switch {
	case port == "auth" && req.Code == 1:
		ok := true
		if want, known := r.Passwords[req.User]; r.Passwords != nil {
			switch {
			case !known:
				ok, req.Error = false, "unknown user"
			case pap != nil:
				if got := decryptPAP(pap, r.Secret, pkt[4:20]); got != want {
					ok, req.Error = false, "wrong PAP password"
				}
			case chap != nil:
				if !checkCHAP(chap, want, pkt[4:20]) {
					ok, req.Error = false, "wrong CHAP password"
				}
			default:
				ok, req.Error = false, "no password"
			}
		}
		code = 3
		if ok {
			code = 2
			if r.FramedIP != nil {
				ip := r.FramedIP(req.User)
				replyAttrs = append(replyAttrs, 8, 6)
				replyAttrs = append(replyAttrs, ip[:]...)
			}
		}
	case port == "acct" && req.Code == 4:
		if err := radiusx.VerifyAccountingRequest(pkt, r.Secret); err != nil {
			req.Error = err.Error()
			return req, nil
		}
		code = 5
	default:
		req.Error = "unexpected code"
		return req, nil
	}
	reply := make([]byte, 20, 64)
	reply[0], reply[1] = code, req.ID
	copy(reply[4:20], pkt[4:20])
	reply = append(reply, replyAttrs...)
	binary.BigEndian.PutUint16(reply[2:4], uint16(len(reply)))
	maOff := -1
	if !r.NoMA {
		reply, maOff = radiusx.AppendMessageAuthenticator(reply)
	}
	radiusx.SignResponse(reply, maOff, r.Secret, req.Code)
	if r.CorruptMA && maOff >= 0 {
		reply[maOff] ^= 0xff
		// Keep the response authenticator valid so that only the MA is wrong.
		h := md5.New()
		h.Write(reply[:4])
		h.Write(pkt[4:20])
		h.Write(reply[20:])
		h.Write(r.Secret)
		h.Sum(reply[4:4])
	}
	return req, reply
}

func decryptPAP(v, secret, auth []byte) string {
	if len(v)%16 != 0 || len(v) == 0 {
		return ""
	}
	out := make([]byte, len(v))
	prev := auth
	for i := 0; i < len(v); i += 16 {
		h := md5.New()
		h.Write(secret)
		h.Write(prev)
		sum := h.Sum(nil)
		for j := 0; j < 16; j++ {
			out[i+j] = v[i+j] ^ sum[j]
		}
		prev = v[i : i+16]
	}
	for len(out) > 0 && out[len(out)-1] == 0 {
		out = out[:len(out)-1]
	}
	return string(out)
}

func checkCHAP(v []byte, password string, challenge []byte) bool {
	if len(v) != 17 {
		return false
	}
	h := md5.New()
	h.Write(v[:1])
	h.Write([]byte(password))
	h.Write(challenge)
	return string(h.Sum(nil)) == string(v[1:])
}

// ErrNotStarted is returned by helpers used before Start.
var ErrNotStarted = errors.New("responder not started")
