package engine

import (
	"errors"
	"fmt"

	"github.com/openaaa/openaaa/internal/eappeer"
	"github.com/openaaa/openaaa/internal/eapwire"
	"github.com/openaaa/openaaa/services/loadgen/internal/packet"
)

// maxEAPRounds bounds one conversation (EAP-TLS takes 4–8 rounds, PEAP-MSCHAPv2 8–12).
const maxEAPRounds = 40

// eapAuth runs one EAP authentication of s with target ti: Access-Requests carrying the peer's
// EAP-Responses (and the State of the challenge they answer) until an Accept or a Reject.
// The authentication is one transaction; each round trip is counted in rounds.
func (w *worker) eapAuth(ti int, s *session) (packet.Reply, error) {
	cfg := &w.e.cfg
	c := w.conns[ti][0]
	pc := eappeer.Config{Method: eapwire.TypeTLS, Identity: s.user.Name, TLS: cfg.EAPTLS}
	if cfg.Auth == PEAPMSCHAPv2 {
		pc.Method, pc.User, pc.Password = eapwire.TypePEAP, s.user.Name, s.user.Password
	}
	p := eappeer.New(pc)
	defer p.Close()
	w.eapMsg, w.eapState = p.Start(), nil
	defer func() { w.eapMsg, w.eapState = nil, nil }()
	for range maxEAPRounds {
		c.id++
		w.c.rounds.Add(1)
		// Never failed over (validate): the conversation's state is on this target.
		_, reply, err := w.exchange(ti, 0, w.build(s, KindAuth, c.id))
		if err != nil || reply.Code != packet.CodeAccessChallenge {
			return reply, err
		}
		if len(reply.EAP) == 0 || len(reply.State) == 0 {
			return reply, errors.New("eap: Access-Challenge without EAP-Message or State")
		}
		w.eapState = append(w.eapState[:0], reply.State...)
		if w.eapMsg, err = p.Step(reply.EAP); err != nil {
			return reply, fmt.Errorf("eap: %w", err)
		}
	}
	return packet.Reply{}, fmt.Errorf("eap: no end after %d rounds", maxEAPRounds)
}
