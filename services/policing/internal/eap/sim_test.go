package eap

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"testing"
)

// simConversation runs EAP-SIM as a peer: it answers the Start (NONCE_MT, version 1, the identity if asked) and then the
// Challenge as a USIM in a GSM context would, sres altered when bad.
func simConversation(t *testing.T, s *Server, id, idAnswer string, bad bool) Result {
	t.Helper()
	r, _ := simAcross(t, []*Server{s}, id, idAnswer, bad)
	return r
}

// simAcross is simConversation with round i sent to nodes[i % len(nodes)]; it also returns
// the conversation's secrets as the peer computed them (SRES, Kc, K_aut, MSK, EMSK).
func simAcross(t *testing.T, nodes []*Server, id, idAnswer string, bad bool) (Result, [][]byte) {
	t.Helper()
	node := func(round int) *Server { return nodes[round%len(nodes)] }
	r := identity(node(0), t, id)
	req, _ := Parse(r.EAP)
	m, err := parseSim(req.Data)
	if err != nil || m.subtype != simStart || !bytes.HasPrefix(m.attrs[atVersionList], []byte{0, 2, 0, 1}) {
		t.Fatalf("not a SIM Start: %x", req.Data)
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	b := newSim(simStart).attr(atNonceMT, []byte{0, 0}, nonce[:]).attr(atSelectedVersion, []byte{0, 1})
	if m.attrs[atPermanentIDReq] != nil {
		b.attr(atIdentity, withLength([]byte(idAnswer)))
		id = idAnswer
	}
	r = node(1).Handle(context.Background(), accessRequest(response(req.ID, TypeSIM, b.b), r.State))
	if !r.Challenge {
		return r, nil
	}
	req, _ = Parse(r.EAP)
	m, err = parseSim(req.Data)
	if err != nil || m.subtype != simChallenge || len(m.attrs[atRAND]) != 2+48 {
		t.Fatalf("not a SIM Challenge with 3 RANDs: %x", req.Data)
	}
	card := testCard()
	h := sha1.New()
	h.Write([]byte(id))
	var sres, secrets [][]byte
	for i := range 3 {
		s, kc := card.GSM(m.attrs[atRAND][2+16*i : 18+16*i])
		sres = append(sres, s[:])
		secrets = append(secrets, s[:], kc[:])
		h.Write(kc[:])
	}
	h.Write(nonce[:])
	h.Write([]byte{0, 1, 0, 1})
	keys := prfKeys([20]byte(h.Sum(nil)))
	secrets = append(secrets, keys.kAut, keys.msk, keys.emsk)
	zeroed := append([]byte{}, req.Data...)
	clear(zeroed[m.macAt : m.macAt+16])
	if !bytes.Equal(simMAC(TypeSIM, keys.kAut, request(req.ID, TypeSIM, zeroed), nonce[:]), req.Data[m.macAt:m.macAt+16]) {
		t.Fatal("the Challenge's AT_MAC (with NONCE_MT) does not verify")
	}
	all := bytes.Join(sres, nil)
	if bad {
		all[0] ^= 1
	}
	rb := newSim(simChallenge).mac()
	copy(rb.b[rb.macAt:], simMAC(TypeSIM, keys.kAut, response(req.ID, TypeSIM, rb.b), all))
	res := node(2).Handle(context.Background(), accessRequest(response(req.ID, TypeSIM, rb.b), r.State))
	if res.Accept && !bytes.Equal(res.MSK, keys.msk) {
		t.Fatal("the MSK is not the peer's")
	}
	return res, secrets
}

func TestSIMConversations(t *testing.T) {
	s, sqn := akaServer(t, TypeSIM)
	if r := simConversation(t, s, "1001010000000001@realm", "", false); !r.Accept || r.Subscriber.Username != "001010000000001" {
		t.Fatalf("not accepted: %+v", r)
	}
	if r := simConversation(t, s, "anonymous@realm", "1001010000000001@realm", false); !r.Accept {
		t.Fatalf("with the permanent identity asked: %+v", r)
	}
	if r := simConversation(t, s, "1001010000000001", "", true); r.Reason != ReasonBadResponse {
		t.Fatalf("a wrong SRES under the MAC: %+v", r)
	}
	if r := simConversation(t, s, "anonymous", "2pseudonym", false); r.Reason != ReasonUnknownUser {
		t.Fatalf("a pseudonym: %+v", r)
	}
	for name, want := range map[string]Reason{"1001010000000099": ReasonUnknownUser, "1001010000000002": ReasonNoAKA} {
		if r := s.Handle(context.Background(), accessRequest(response(7, TypeIdentity, []byte(name)), nil)); r.Reason != want {
			t.Fatalf("%s: %+v, want %s", name, r, want)
		}
	}
	if len(sqn.m) != 0 {
		t.Fatal("EAP-SIM took a SQN")
	}
}

func TestSIMRandomRounds(t *testing.T) {
	s, _ := akaServer(t, TypeSIM)
	buf := make([]byte, 64)
	for i := range 300 {
		r := identity(s, t, []string{"1001010000000001", "anonymous"}[i%2])
		for r.Challenge {
			n, _ := rand.Read(buf[:1+i%63])
			if i%3 == 0 && n > 3 {
				buf[0], buf[1], buf[2] = []byte{simStart, simChallenge}[i%2], 0, 0
			}
			r = s.Handle(context.Background(), accessRequest(response(r.EAP[1], TypeSIM, buf[:n]), r.State))
		}
		if r.Accept {
			t.Fatalf("random bytes accepted: %+v", r)
		}
	}
}
