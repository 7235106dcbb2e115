package eap

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/openaaa/openaaa/internal/milenage"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// FIPS 186-2 change notice 1, Appendix 3.3: XKEY = bd029bbe…, w0 ‖ w1.
func TestFIPS186PRF(t *testing.T) {
	xkey, _ := hex.DecodeString("bd029bbe7f51960bcf9edb2b61f06f0feb5a38b6")
	want := "2070b3223dba372fde1c0ffc7b2e3b498b2606143c6c18bacb0f6c55babb13788e20d737a3275116"
	if got := hex.EncodeToString(fips186PRF([20]byte(xkey), 40)); got != want {
		t.Fatalf("PRF = %s, want %s", got, want)
	}
}

type sqnMap struct {
	mu sync.Mutex
	m  map[string]uint64
}

func (s *sqnMap) NextSQN(_ context.Context, sub string, floor uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := max(s.m[sub]+1, floor)
	s.m[sub] = n
	return n, nil
}

const (
	akaKi  = "465b5ce8b199b49faa5f0a2ee238a6bc"
	akaOPc = "cd63cb71954a9f4e48a5994e37a02baf"
)

func akaSubscribers() subs {
	return subs{
		"001010000000001": {Username: "001010000000001", Ki: akaKi, OPc: akaOPc, SQN: "00000000001f"},
		"001010000000002": {Username: "001010000000002", Password: "x"},
	}
}

func akaServer(t *testing.T, methods ...byte) (*Server, *sqnMap) {
	t.Helper()
	sqn := &sqnMap{m: map[string]uint64{}}
	return akaNode(t, "node-a", nil, sqn, akaSubscribers(), methods...), sqn
}

// akaNode is a server named id with the subscribers who, the SQN counter sqn and the store
// shared (nil: none).
func akaNode(t *testing.T, id string, shared session.Ephemeral, sqn session.SQNCounter, who subs, methods ...byte) *Server {
	t.Helper()
	s := New(Options{Metrics: testMetrics, Methods: methods, NodeID: id, MaxConversations: 100, Timeout: 30 * time.Second,
		Subscribers: who, SQN: sqn, AKANetworkName: "WLAN", Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Shared: shared})
	t.Cleanup(s.Close)
	return s
}

// testCard is the USIM of subscriber 001010000000001.
func testCard() *milenage.Card {
	k, _ := hex.DecodeString(akaKi)
	o, _ := hex.DecodeString(akaOPc)
	card, _ := milenage.New(k, o)
	return card
}

// auts is the card's AT_AUTS answering rand when its SQN is ms.
func auts(rand []byte, ms uint64) []byte {
	card := testCard()
	ks := card.F2345(rand)
	s := milenage.PutSQN(ms)
	out := make([]byte, 14)
	subtle.XORBytes(out[:6], s[:], ks.AKStar[:])
	_, macS := card.F1(rand, s[:], []byte{0, 0})
	copy(out[6:], macS[:])
	return out
}

func syncFailure(typ, id byte, auts []byte) []byte {
	return response(id, typ, newSim(akaSyncFailure).attr(atAUTS, auts).b)
}

// peerChallenge reads a Challenge as the card and the peer do: RAND, AUTN, the keys.
func peerChallenge(t *testing.T, typ byte, identity string, req Packet) (rand, autn []byte, ks milenage.Keys, keys akaKeys) {
	t.Helper()
	m, err := parseSim(req.Data)
	if err != nil || m.subtype != akaChallenge || m.macAt == 0 {
		t.Fatalf("not a Challenge: %x (%v)", req.Data, err)
	}
	rand, autn = m.attrs[atRAND][2:], m.attrs[atAUTN][2:]
	ks = testCard().F2345(rand)
	if typ == TypeAKAPrime {
		if kdf := m.attrs[atKDF]; !bytes.Equal(kdf, []byte{0, 1}) || string(m.attrs[atKDFInput][2:6]) != "WLAN" {
			t.Fatalf("AT_KDF %x, AT_KDF_INPUT %q", kdf, m.attrs[atKDFInput])
		}
		ckP, ikP := ckIKPrime(ks.CK[:], ks.IK[:], "WLAN", autn[:6])
		keys = akaPrimeDerive(identity, ikP, ckP)
	} else {
		keys = akaDerive(identity, ks.IK[:], ks.CK[:])
	}
	zeroed := append([]byte{}, req.Data...)
	clear(zeroed[m.macAt : m.macAt+16])
	if !bytes.Equal(simMAC(typ, keys.kAut, request(req.ID, typ, zeroed), nil), req.Data[m.macAt:m.macAt+16]) {
		t.Fatal("the Challenge's AT_MAC does not verify")
	}
	return rand, autn, ks, keys
}

// answerOn is a conversation begun on first whose Challenge is answered on second with the
// peer's RES and K_aut as alter returns them (it runs between the two rounds).
func answerOn(t *testing.T, typ byte, id string, first, second *Server, alter func(res, kAut []byte) ([]byte, []byte)) Result {
	t.Helper()
	r := identity(first, t, id)
	req, _ := Parse(r.EAP)
	_, _, ks, keys := peerChallenge(t, typ, id, req)
	res, kAut := alter(ks.RES[:], keys.kAut)
	return second.Handle(context.Background(), accessRequest(challengeResponse(typ, req.ID, res, kAut), r.State))
}

// wrongRES flips a bit of RES, under a good AT_MAC.
func wrongRES(res, kAut []byte) ([]byte, []byte) { res[0] ^= 1; return res, kAut }

// challengeResponse is the peer's AKA-Challenge with res, sealed with kAut.
func challengeResponse(typ, id byte, res []byte, kAut []byte) []byte {
	b := newSim(akaChallenge).attr(atRES, binary.BigEndian.AppendUint16(nil, uint16(8*len(res))), res).mac()
	data := b.b
	pkt := response(id, typ, data)
	copy(data[b.macAt:], simMAC(typ, kAut, pkt, nil))
	return response(id, typ, data)
}

func TestAKAConversations(t *testing.T) {
	for _, typ := range []byte{TypeAKA, TypeAKAPrime} {
		t.Run(typeName(typ), func(t *testing.T) {
			s, sqn := akaServer(t, typ)
			id := "0001010000000001@wlan.mnc001.mcc001.3gppnetwork.org"
			r := identity(s, t, id)
			req, _ := Parse(r.EAP)
			_, _, ks, keys := peerChallenge(t, typ, id, req)
			if sqn.m["001010000000001"] != 0x20 {
				t.Fatalf("SQN %x, want the file's 1f + 1", sqn.m["001010000000001"])
			}
			res := s.Handle(context.Background(), accessRequest(challengeResponse(typ, req.ID, ks.RES[:], keys.kAut), r.State))
			if !res.Accept || res.Subscriber.Username != "001010000000001" || !bytes.Equal(res.MSK, keys.msk) || len(res.MSK) != 64 {
				t.Fatalf("not accepted with the peer's MSK: %+v", res)
			}
			// A wrong RES (with a good MAC), a wrong MAC.
			if res := answerOn(t, typ, id, s, s, wrongRES); res.Reason != ReasonBadResponse {
				t.Fatalf("wrong RES: %+v", res)
			}
			wrongMAC := func(res, _ []byte) ([]byte, []byte) { return res, make([]byte, 32) }
			if res := answerOn(t, typ, id, s, s, wrongMAC); res.Reason != ReasonBadResponse {
				t.Fatalf("wrong MAC: %+v", res)
			}
		})
	}
}

// The card's AUTS moves the SQN past SQNms and a new Challenge follows; a forged AUTS, or a
// second resynchronisation, ends the conversation.
func TestAKAResync(t *testing.T) {
	s, sqn := akaServer(t, TypeAKA)
	id := "0001010000000001"
	r := identity(s, t, id)
	req, _ := Parse(r.EAP)
	rnd, _, _, _ := peerChallenge(t, TypeAKA, id, req)
	r = s.Handle(context.Background(), accessRequest(syncFailure(TypeAKA, req.ID, auts(rnd, 0x5000)), r.State))
	if !r.Challenge || sqn.m["001010000000001"] != 0x5001 {
		t.Fatalf("after AUTS: %+v, SQN %x (want 5001)", r, sqn.m["001010000000001"])
	}
	req, _ = Parse(r.EAP)
	rnd, _, _, _ = peerChallenge(t, TypeAKA, id, req)
	if r = s.Handle(context.Background(), accessRequest(syncFailure(TypeAKA, req.ID, auts(rnd, 0x6000)), r.State)); r.Reason != ReasonResync {
		t.Fatalf("a second resynchronisation: %+v", r)
	}
	r = identity(s, t, id)
	req, _ = Parse(r.EAP)
	rnd, _, _, _ = peerChallenge(t, TypeAKA, id, req)
	forged := auts(rnd, 0x9000)
	forged[13] ^= 1
	if r = s.Handle(context.Background(), accessRequest(syncFailure(TypeAKA, req.ID, forged), r.State)); r.Reason != ReasonResync {
		t.Fatalf("a forged AUTS: %+v", r)
	}
	if sqn.m["001010000000001"] >= 0x9000 {
		t.Fatal("a forged AUTS moved the SQN")
	}
}

// Identities: an anonymous one is asked for the permanent one (AT_PERMANENT_ID_REQ); an
// unknown IMSI, a subscriber without Ki, a non-permanent AT_IDENTITY are refused.
func TestAKAIdentities(t *testing.T) {
	s, _ := akaServer(t, TypeAKA)
	r := identity(s, t, "anonymous@realm")
	req, _ := Parse(r.EAP)
	m, err := parseSim(req.Data)
	if err != nil || m.subtype != akaIdentity || m.attrs[atPermanentIDReq] == nil {
		t.Fatalf("not an AKA-Identity asking the permanent identity: %x", req.Data)
	}
	idResp := func(id byte, name string) []byte {
		return response(id, TypeAKA, newSim(akaIdentity).attr(atIdentity, withLength([]byte(name))).b)
	}
	r2 := s.Handle(context.Background(), accessRequest(idResp(req.ID, "0001010000000001@realm"), r.State))
	req2, _ := Parse(r2.EAP)
	if !r2.Challenge {
		t.Fatalf("no Challenge after the permanent identity: %+v", r2)
	}
	peerChallenge(t, TypeAKA, "0001010000000001@realm", req2) // the keys bind AT_IDENTITY
	r = identity(s, t, "anonymous@realm")
	req, _ = Parse(r.EAP)
	if r = s.Handle(context.Background(), accessRequest(idResp(req.ID, "2pseudonym@realm"), r.State)); r.Reason != ReasonUnknownUser {
		t.Fatalf("a pseudonym: %+v", r)
	}
	for name, want := range map[string]Reason{"0001010000000099": ReasonUnknownUser, "0001010000000002": ReasonNoAKA} {
		r := s.Handle(context.Background(), accessRequest(response(7, TypeIdentity, []byte(name)), nil))
		if r.Challenge || r.Reason != want {
			t.Fatalf("%s: %+v, want %s", name, r, want)
		}
	}
	for _, bad := range []string{"0", "01234", "6abc123456", "00010100000000011234", "1001010000000001"} {
		if _, ok := permanentIMSI(bad, akaPrefixes); ok {
			t.Errorf("%q taken for a permanent identity", bad)
		}
	}
}

// Random bytes in every round end in a Result, never a panic nor an Accept.
func TestAKARandomRounds(t *testing.T) {
	s, _ := akaServer(t, TypeAKA, TypeAKAPrime)
	buf := make([]byte, 64)
	for i := range 300 {
		typ := []byte{TypeAKA, TypeAKAPrime}[i%2]
		r := identity(s, t, []string{"0001010000000001", "anonymous"}[i/2%2])
		if typ == TypeAKAPrime {
			r = s.Handle(context.Background(), accessRequest(response(r.EAP[1], TypeNak, []byte{typ}), r.State))
		}
		for r.Challenge {
			n, _ := rand.Read(buf[:1+i%63])
			if i%3 == 0 && n > 3 { // well-formed headers, random attributes
				buf[0], buf[1], buf[2] = []byte{akaChallenge, akaSyncFailure, akaIdentity}[i%3], 0, 0
			}
			r = s.Handle(context.Background(), accessRequest(response(r.EAP[1], typ, buf[:n]), r.State))
		}
		if r.Accept {
			t.Fatalf("random bytes accepted: %+v", r)
		}
	}
}

// RFC 9048 Appendix D (RFC 5448 Appendix C), cases 1 and 2: CK', IK' from CK, IK, the
// network name and SQN ⊕ AK, then K_aut, the MSK and the EMSK by PRF'.
func TestAKAPrimeKeysRFC9048(t *testing.T) {
	h := func(s string) []byte { b, _ := hex.DecodeString(s); return b }
	ck, ik, sqnAK := h("5349fbe098649f948f5d2e973a81c00f"), h("9744871ad32bf9bbd1dd5ce54e3e2e5a"), h("bb52e91c747a")
	ckP, ikP := ckIKPrime(ck, ik, "WLAN", sqnAK)
	if hex.EncodeToString(ckP) != "0093962d0dd84aa5684b045c9edffa04" || hex.EncodeToString(ikP) != "ccfc230ca74fcc96c0a5d61164f5a76c" {
		t.Fatalf("WLAN: CK' %x IK' %x", ckP, ikP)
	}
	k := akaPrimeDerive("0555444333222111", ikP, ckP)
	for name, g := range map[string][2]string{
		"K_aut": {hex.EncodeToString(k.kAut), "0842ea722ff6835bfa2032499fc3ec23c2f0e388b4f07543ffc677f1696d71ea"},
		"MSK":   {hex.EncodeToString(k.msk), "67c42d9aa56c1b79e295e3459fc3d187d42be0bf818d3070e362c5e967a4d544e8ecfe19358ab3039aff03b7c930588c055babee58a02650b067ec4e9347c75a"},
		"EMSK":  {hex.EncodeToString(k.emsk), "f861703cd775590e16c7679ea3874ada866311de290764d760cf76df647ea01c313f69924bdd7650ca9bac141ea075c4ef9e8029c0e290cdbad5638b63bc23fb"},
	} {
		if g[0] != g[1] {
			t.Errorf("%s = %s, want %s", name, g[0], g[1])
		}
	}
	ckP, ikP = ckIKPrime(ck, ik, "HRPD", sqnAK)
	if hex.EncodeToString(ckP) != "3820f0277fa5f77732b1fb1d90c1a0da" || hex.EncodeToString(ikP) != "db94a0ab557ef6c9ab48619ca05b9a9f" {
		t.Fatalf("HRPD: CK' %x IK' %x", ckP, ikP)
	}
}

type sqnDown struct{}

func (sqnDown) NextSQN(ctx context.Context, _ string, _ uint64) (uint64, error) {
	<-ctx.Done() // a store that does not answer: eap.roundTimeout gives up
	return 0, ctx.Err()
}

// A store that gives no SQN within the round timeout ends the conversation
// (sqn_store_unavailable), no vector sent.
func TestAKASQNStoreDown(t *testing.T) {
	s, _ := akaServer(t, TypeAKA)
	s.opt.SQN, s.opt.RoundTimeout = sqnDown{}, 50*time.Millisecond
	start := time.Now()
	r := s.Handle(context.Background(), accessRequest(response(7, TypeIdentity, []byte("0001010000000001")), nil))
	if r.Challenge || r.Reason != ReasonSQNStore || time.Since(start) > 10*time.Second {
		t.Fatalf("%+v after %v", r, time.Since(start))
	}
}
