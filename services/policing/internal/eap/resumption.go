package eap

import (
	"crypto/tls"
	"encoding/binary"
	"time"
)

// TLS session resumption (docs/eap.md "Session resumption"): stateless, by session tickets
// (TLS 1.2 RFC 5077 tickets, TLS 1.3 PSK tickets) that crypto/tls encrypts with the ticket
// keys every node shares, so that a re-authentication resumes on any node that has them.
//
// What a resumed session proves and what it does not:
//   - EAP-TLS: the ticket carries the client certificate (crypto/tls restores
//     PeerCertificates and their verified chains from it, and refuses to resume one expired
//     or no longer chaining to the CAs in force); finishTLS names and looks up the subscriber
//     from it as after a full handshake; the CRLs in force are checked again here (crypto/tls
//     does not call VerifyPeerCertificate on a resumption).
//   - PEAP: nothing of the inner authentication is in the ticket (a TLS 1.2 ticket is sent
//     before the inner method runs, and TLS 1.3's ones in our first flight); the inner method
//     runs again inside the resumed tunnel, which wpa_supplicant accepts: only the public-key
//     work is saved.
//   - TTLS: no tickets. wpa_supplicant skips the inner method on a resumed TTLS session and
//     waits for EAP-Success, and a ticket issued before the inner method cannot vouch for
//     it: anyone completing the anonymous handshake would get one.
//   - A ticket resumes for at most Options.TicketLifetime after the full handshake that
//     started its session, however many resumptions later (ticketIssued in Extra).

// ticketExtraID prefixes our entry of tls.SessionState.Extra (its users share it: an
// identifier and version, then the Unix time of the full handshake, 8 octets).
const ticketExtraID = "openaaa-eap-issued-v1:"

// ticketNow is the clock of the ticket lifetimes (a test moves it).
var ticketNow = time.Now

// resumption sets cfg (a clone of base, for one conversation) to issue and accept session
// tickets under the keys in force, or turns tickets off when resumption is.
func (m *tlsMethod) resumption(cfg, base *tls.Config) {
	opt := m.srv.opt
	var keys [][32]byte
	if opt.TicketKeys != nil {
		keys = opt.TicketKeys()
	}
	if len(keys) == 0 || m.typ == TypeTTLS {
		cfg.SessionTicketsDisabled = true
		return
	}
	cfg.SessionTicketsDisabled = false
	cfg.SetSessionTicketKeys(keys)
	cfg.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
		issued := ticketNow()
		if cs.DidResume && !m.issued.IsZero() {
			issued = m.issued // a resumed session keeps the age of its first handshake
		}
		ss.Extra = append(ss.Extra, binary.BigEndian.AppendUint64([]byte(ticketExtraID), uint64(issued.Unix())))
		return cfg.EncryptTicket(cs, ss)
	}
	cfg.UnwrapSession = func(ticket []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
		ss, err := cfg.DecryptTicket(ticket, cs)
		if err != nil || ss == nil { // nil, nil: not ours (another key), a full handshake
			return nil, err
		}
		issued, ok := ticketIssued(ss.Extra)
		if age := ticketNow().Sub(issued); !ok || age < -time.Minute || age > opt.TicketLifetime {
			return nil, nil
		}
		m.issued = issued
		return ss, nil
	}
	if verify := base.VerifyPeerCertificate; verify != nil && m.typ == TypeTLS {
		// The CRL check of the full handshake, on the chains the ticket restored.
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if !cs.DidResume {
				return nil // VerifyPeerCertificate ran
			}
			return verify(nil, cs.VerifiedChains)
		}
	}
}

// ticketIssued is the time of the full handshake recorded in a ticket's Extra.
func ticketIssued(extra [][]byte) (time.Time, bool) {
	for _, e := range extra {
		if len(e) == len(ticketExtraID)+8 && string(e[:len(ticketExtraID)]) == ticketExtraID {
			return time.Unix(int64(binary.BigEndian.Uint64(e[len(ticketExtraID):])), 0), true
		}
	}
	return time.Time{}, false
}
