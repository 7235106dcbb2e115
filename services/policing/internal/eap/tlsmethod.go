package eap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/openaaa/openaaa/internal/eapwire"
	"github.com/openaaa/openaaa/services/policing/internal/tlsfiles"
)

// The TLS-based methods' framing (RFC 5216 §3.1) is internal/eapwire's.
const (
	flagLength = eapwire.FlagLength
	flagMore   = eapwire.FlagMore
	flagStart  = eapwire.FlagStart
	// maxMessage bounds a peer's reassembled TLS message (a flight with a certificate chain).
	maxMessage = 64 << 10
)

// tunnel is the inner method of PEAP or TTLS, run over the established TLS tunnel.
type tunnel interface {
	// begin is the first inner plaintext the server sends, nil when the peer speaks first.
	begin() []byte
	// handle consumes the peer's plaintext: the reply plaintext, or the end.
	handle(ctx context.Context, e *engine, plain []byte) ([]byte, outcome)
}

// tlsMethod is EAP-TLS (inner nil), PEAP or TTLS.
type tlsMethod struct {
	srv   *Server
	typ   byte
	inner tunnel
	eng   *engine

	in          []byte // the peer's message being reassembled
	inLen       int    // its announced length (0: none)
	out         []byte // the rest of our message, sent fragment by fragment
	first       bool   // the next fragment is the first of our message
	established bool
	phase2      bool
	v13         bool
	issued      time.Time // when the session resumed was first established (resumption.go)
}

func newTLSMethod(s *Server, typ byte, inner tunnel) *tlsMethod {
	return &tlsMethod{srv: s, typ: typ, inner: inner}
}

var errNoCertificate = errors.New("no EAP server certificate loaded (eap.certFile)")

func (m *tlsMethod) start(context.Context) ([]byte, error) {
	base := m.srv.opt.TLS()
	if base == nil {
		return nil, errNoCertificate
	}
	cfg := base.Clone()
	m.resumption(cfg, base) // session tickets, or full handshakes only (resumption.go)
	cfg.MaxVersion = m.srv.opt.TLSMaxVersion
	if m.typ == TypeTLS {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	} else {
		cfg.ClientAuth = tls.NoClientCert
	}
	m.eng = newEngine(cfg)
	return []byte{flagStart}, nil
}

func (m *tlsMethod) close() {
	if m.eng != nil {
		m.eng.Close()
	}
}

func (m *tlsMethod) step(ctx context.Context, _ byte, data []byte) outcome {
	if len(data) < 1 {
		return fail(ReasonMalformed)
	}
	flags, body := data[0], data[1:]
	total := 0
	if flags&flagLength != 0 {
		if len(body) < 4 {
			return fail(ReasonMalformed)
		}
		total, body = int(binary.BigEndian.Uint32(body)), body[4:]
		if total == 0 || total > maxMessage {
			return fail(ReasonBadFragment)
		}
	}
	if len(m.out) > 0 { // the peer acknowledges our previous fragment
		if len(body) != 0 || flags&flagMore != 0 {
			return fail(ReasonBadFragment)
		}
		return outcome{next: m.fragment()}
	}
	if len(m.in) == 0 {
		if flags&flagMore != 0 && total == 0 { // RFC 5216 §2.1.5: L on the first fragment
			return fail(ReasonBadFragment)
		}
		m.inLen = total
	}
	m.in = append(m.in, body...)
	if len(m.in) > maxMessage || (m.inLen > 0 && len(m.in) > m.inLen) {
		return fail(ReasonBadFragment)
	}
	if flags&flagMore != 0 {
		if len(body) == 0 {
			return fail(ReasonBadFragment)
		}
		return outcome{next: []byte{0}} // acknowledge the fragment
	}
	if m.inLen > 0 && len(m.in) != m.inLen {
		return fail(ReasonBadFragment)
	}
	msg := m.in
	m.in, m.inLen = nil, 0
	return m.message(ctx, msg)
}

// message handles one whole TLS message of the peer.
func (m *tlsMethod) message(ctx context.Context, msg []byte) outcome {
	if !m.established {
		if len(msg) == 0 {
			return fail(ReasonMalformed)
		}
		out, done, err := m.eng.Handshake(msg, m.srv.opt.RoundTimeout)
		if err != nil {
			return m.tlsFailed(err)
		}
		if done {
			m.established = true
			st := m.eng.State()
			m.v13 = st.Version == tls.VersionTLS13
			m.srv.opt.Metrics.handshakes.WithLabelValues(typeName(m.typ), strconv.FormatBool(st.DidResume)).Inc()
			if m.v13 && m.inner != nil {
				// TLS 1.3 ends with the peer's Finished: no flight of ours is left for it to
				// acknowledge, so the tunnel's conversation starts in this round, on inner
				// data the peer may have sent after its Finished (wpa_supplicant 2.10 sends
				// none). The inner method gives the result: no 0x00 commitment as in EAP-TLS.
				plain, err := m.eng.Read(nil)
				if err != nil {
					return m.tlsFailed(err)
				}
				return m.tunnel(ctx, out, plain)
			}
			if m.v13 {
				// RFC 9190 §2.5: one octet 0x00 of application data commits to no more
				// handshake messages.
				commit, err := m.eng.Write([]byte{0})
				if err != nil {
					return m.tlsFailed(err)
				}
				out = append(out, commit...)
			}
			if len(out) == 0 {
				// A resumed TLS 1.2 handshake ends with the peer's Finished: EAP-TLS succeeds
				// at once (RFC 5216 §2.1.3), PEAP starts its inner method in this round.
				if m.inner == nil {
					return m.finishTLS(ctx)
				}
				return m.tunnel(ctx, nil, nil)
			}
		}
		return m.send(out)
	}
	if m.inner == nil {
		// EAP-TLS: the peer acknowledges our last flight (or, TLS 1.3, the commitment) with
		// an empty message; anything else it sends must at least be records that decrypt
		// (an alert does not).
		if len(msg) > 0 {
			if _, err := m.eng.Read(msg); err != nil {
				return m.tlsFailed(err)
			}
		}
		return m.finishTLS(ctx)
	}
	var plain []byte
	if len(msg) > 0 {
		var err error
		if plain, err = m.eng.Read(msg); err != nil {
			return m.tlsFailed(err)
		}
	}
	return m.tunnel(ctx, nil, plain)
}

// tunnel runs the inner method on the peer's plaintext (none: the tunnel's start, our first
// inner message or an empty Request when the peer speaks first); lead is what the handshake
// wrote last, sent before the reply (empty today: crypto/tls writes nothing after the
// peer's Finished unless it asked for a client certificate with tickets on).
func (m *tlsMethod) tunnel(ctx context.Context, lead, plain []byte) outcome {
	if !m.phase2 && len(plain) == 0 {
		m.phase2 = true
		return m.sendPlain(lead, m.inner.begin())
	}
	m.phase2 = true
	reply, o := m.inner.handle(ctx, m.eng, plain)
	if !o.done {
		return m.sendPlain(lead, reply)
	}
	if o.reason == "" {
		if o.msk, o.reason = m.msk(); o.reason != "" {
			return fail(o.reason)
		}
	}
	return o
}

func (m *tlsMethod) tlsFailed(err error) outcome {
	r := ReasonTLS
	switch {
	case errors.Is(err, errRoundTimeout):
		return fail(ReasonTimeout)
	case errors.Is(err, tlsfiles.ErrRevoked): // the CRL check of the certificate set in force
		r = ReasonRevoked
	case errors.Is(err, tlsfiles.ErrNoCRL):
		r = ReasonNoCRL
	}
	m.srv.opt.Log.Debug("eap tls failed", "method", typeName(m.typ), "err", err)
	return fail(r)
}

// sendPlain encrypts inner plaintext into the next Request, after lead.
func (m *tlsMethod) sendPlain(lead, p []byte) outcome {
	if len(p) == 0 {
		return m.send(lead)
	}
	out, err := m.eng.Write(p)
	if err != nil {
		return m.tlsFailed(err)
	}
	return m.send(append(lead, out...))
}

func (m *tlsMethod) send(out []byte) outcome {
	m.out, m.first = out, true
	return outcome{next: m.fragment()}
}

// fragment is the next Request's type-data: flags, the length on the first of several
// fragments, at most maxFragment octets of our message.
func (m *tlsMethod) fragment() []byte {
	b, rest := eapwire.Fragment(m.out, m.first)
	m.out, m.first = rest, false
	return b
}

// finishTLS names the EAP-TLS subscriber after its certificate (verified against eap.caFile
// by the handshake) and derives the MSK.
func (m *tlsMethod) finishTLS(ctx context.Context) outcome {
	certs := m.eng.State().PeerCertificates
	if len(certs) == 0 {
		return fail(ReasonCertificate)
	}
	name := certIdentity(certs[0], m.srv.opt.TLSIdentity)
	if name == "" {
		return fail(ReasonCertificate)
	}
	sub, r := m.srv.lookup(ctx, name)
	if r != "" {
		return fail(r)
	}
	msk, r := m.msk()
	if r != "" {
		return fail(r)
	}
	return outcome{done: true, sub: sub, msk: msk}
}

// certIdentity is the subscriber a client certificate names.
func certIdentity(c *x509.Certificate, from string) string {
	if from != "subjectAltName" {
		return c.Subject.CommonName
	}
	switch {
	case len(c.EmailAddresses) > 0:
		return c.EmailAddresses[0]
	case len(c.DNSNames) > 0:
		return c.DNSNames[0]
	}
	return ""
}
