// Package eappeer is the peer (supplicant) side of EAP-TLS and PEAPv0/EAP-MSCHAPv2 for
// aaa-loadgen: it answers each EAP-Request with the next EAP-Response, running crypto/tls
// over the EAP rounds (internal/eaptls) with the framing of internal/eapwire, the same code
// policing's EAP server uses. The RADIUS transport (EAP-Message, State) is the caller's.
package eappeer

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/openaaa/openaaa/internal/eaptls"
	"github.com/openaaa/openaaa/internal/eapwire"
)

// Config is one authentication's peer.
type Config struct {
	// Method is eapwire.TypeTLS or eapwire.TypePEAP.
	Method byte
	// Identity is the outer EAP identity (PEAP: the user, as eapol_test without an
	// anonymous identity sends it).
	Identity string
	// User and Password authenticate inside PEAP (EAP-MSCHAPv2).
	User, Password string
	// TLS is the client's configuration: RootCAs and ServerName to check the server, and the
	// client certificate for EAP-TLS.
	TLS *tls.Config
	// RoundTimeout bounds the TLS work of one round.
	RoundTimeout time.Duration
}

// Peer is one conversation; not safe for concurrent use.
type Peer struct {
	cfg         Config
	eng         *eaptls.Engine
	in          []byte // the server's TLS message being reassembled
	out         []byte // the rest of our TLS message, sent fragment by fragment
	established bool
	inner       mschap
}

// New is a peer for one authentication.
func New(cfg Config) *Peer {
	if cfg.RoundTimeout <= 0 {
		cfg.RoundTimeout = 10 * time.Second
	}
	return &Peer{cfg: cfg}
}

// Close ends the TLS engine's goroutine, if any.
func (p *Peer) Close() {
	if p.eng != nil {
		p.eng.Close()
	}
}

// Start is the first EAP-Response/Identity (the NAS got it from the peer before the first
// Access-Request).
func (p *Peer) Start() []byte {
	return eapwire.Encode(eapwire.CodeResponse, 0, eapwire.TypeIdentity, []byte(p.cfg.Identity))
}

// Step answers the server's EAP-Request req.
func (p *Peer) Step(req []byte) ([]byte, error) {
	r, err := eapwire.Parse(req)
	if err != nil {
		return nil, err
	}
	if r.Code != eapwire.CodeRequest {
		return nil, fmt.Errorf("EAP code %d before the end", r.Code)
	}
	switch r.Type {
	case eapwire.TypeIdentity:
		return eapwire.Encode(eapwire.CodeResponse, r.ID, eapwire.TypeIdentity, []byte(p.cfg.Identity)), nil
	case p.cfg.Method:
		data, err := p.tlsStep(r.Data)
		if err != nil {
			return nil, err
		}
		return eapwire.Encode(eapwire.CodeResponse, r.ID, r.Type, data), nil
	default:
		// Legacy Nak naming the method wanted (RFC 3748 §5.3.1).
		return eapwire.Encode(eapwire.CodeResponse, r.ID, eapwire.TypeNak, []byte{p.cfg.Method}), nil
	}
}

var errFragment = errors.New("bad TLS fragment")

// tlsStep consumes the type-data of a TLS-method Request and returns that of the Response.
func (p *Peer) tlsStep(data []byte) ([]byte, error) {
	if len(data) < 1 {
		return nil, errFragment
	}
	flags, body := data[0], data[1:]
	if flags&eapwire.FlagStart != 0 {
		if p.eng != nil {
			return nil, errors.New("TLS start twice")
		}
		p.eng = eaptls.NewClient(p.cfg.TLS)
		hello, _, err := p.eng.Handshake(nil, p.cfg.RoundTimeout)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		return p.send(hello), nil
	}
	if p.eng == nil {
		return nil, errors.New("TLS data before start")
	}
	if len(p.out) > 0 { // the server acknowledges our previous fragment
		if len(body) != 0 {
			return nil, errFragment
		}
		return p.next(false), nil
	}
	if flags&eapwire.FlagLength != 0 {
		if len(body) < 4 || binary.BigEndian.Uint32(body) > 64<<10 {
			return nil, errFragment
		}
		body = body[4:]
	}
	p.in = append(p.in, body...)
	if flags&eapwire.FlagMore != 0 {
		return []byte{0}, nil // acknowledge the fragment
	}
	msg := p.in
	p.in = nil
	return p.message(msg)
}

// message handles one whole TLS message of the server.
func (p *Peer) message(msg []byte) ([]byte, error) {
	if !p.established {
		out, done, err := p.eng.Handshake(msg, p.cfg.RoundTimeout)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		p.established = done
		return p.send(out), nil
	}
	var plain []byte
	if len(msg) > 0 {
		var err error
		if plain, err = p.eng.Read(msg); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
	}
	if p.cfg.Method == eapwire.TypeTLS || len(plain) == 0 {
		// EAP-TLS: the TLS 1.3 commitment (RFC 9190 §2.5) or nothing; acknowledged.
		return p.send(nil), nil
	}
	reply, err := p.inner.handle(&p.cfg, plain)
	if err != nil {
		return nil, err
	}
	out, err := p.eng.Write(reply)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return p.send(out), nil
}

// send starts sending a TLS message (empty: an acknowledgement).
func (p *Peer) send(out []byte) []byte {
	p.out = out
	return p.next(true)
}

func (p *Peer) next(first bool) []byte {
	b, rest := eapwire.Fragment(p.out, first)
	p.out = rest
	return b
}
