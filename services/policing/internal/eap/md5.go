package eap

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
)

// EAP-MD5 (RFC 3748 §5.4): CHAP over EAP, one challenge, no keys (a NAS doing WPA needs an
// MSK: use a TLS method). It needs the subscriber's clear-text password. It costs a few lines,
// so it is here; it offers no mutual authentication and falls to an offline dictionary attack.
type md5Method struct {
	srv       *Server
	identity  string
	challenge [16]byte
}

func (m *md5Method) start(context.Context) ([]byte, error) {
	_, _ = rand.Read(m.challenge[:])
	return append([]byte{byte(len(m.challenge))}, m.challenge[:]...), nil
}

func (m *md5Method) step(ctx context.Context, id byte, data []byte) outcome {
	if len(data) < 17 || data[0] != 16 {
		return fail(ReasonMalformed)
	}
	sub, r := m.srv.lookup(ctx, m.identity)
	if r != "" {
		return fail(r)
	}
	if sub.Password == "" {
		return fail(ReasonNoClearText)
	}
	h := md5.New()
	h.Write([]byte{id})
	h.Write([]byte(sub.Password))
	h.Write(m.challenge[:])
	if subtle.ConstantTimeCompare(h.Sum(nil), data[1:17]) != 1 {
		return fail(ReasonBadPassword)
	}
	return outcome{done: true, sub: sub}
}

func (m *md5Method) close() {}

// state is the challenge: all an MD5 conversation needs to continue on another node.
func (m *md5Method) state() []byte { return m.challenge[:] }
