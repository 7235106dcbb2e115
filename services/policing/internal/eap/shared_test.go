package eap

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/internal/milenage"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// node is a server named id sharing store with the others (nil: none), as the policing
// nodes of several DCs share one Cassandra keyspace.
func node(t *testing.T, id string, store session.Ephemeral, methods ...byte) *Server {
	t.Helper()
	cfg := selfSigned(t)
	s := New(Options{Metrics: testMetrics, Methods: methods, NodeID: id, MaxConversations: 100, Timeout: 30 * time.Second,
		RoundTimeout: 5 * time.Second, TLS: func() *tls.Config { return cfg }, TLSMaxVersion: tls.VersionTLS13,
		TLSIdentity: "commonName", Subscribers: subs{"alice": {Username: "alice", Password: "alicepw"}},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Shared: store})
	t.Cleanup(s.Close)
	return s
}

func sharedStore(t *testing.T) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(embedded.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return st
}

// md5Answer is the peer's EAP-MD5 Response to the Request in r.
func md5Answer(t *testing.T, r Result, password string) []byte {
	t.Helper()
	req, err := Parse(r.EAP)
	if err != nil || req.Type != TypeMD5 {
		t.Fatalf("not an MD5 challenge: %+v (%v, %s)", req, err, r.Reason)
	}
	h := md5.New()
	h.Write([]byte{req.ID})
	h.Write([]byte(password))
	h.Write(req.Data[1:17])
	return response(req.ID, TypeMD5, append([]byte{16}, h.Sum(nil)...))
}

// An EAP-MD5 conversation begun on node A (DC1) ends on node B (DC2): its state went through
// the shared store under a shared State, used once; A keeps nothing in memory.
func TestMD5ConversationAcrossNodes(t *testing.T) {
	st := sharedStore(t)
	a, b := node(t, "dc1-a", st, TypeMD5), node(t, "dc2-b", st, TypeMD5)
	before := testutil.ToFloat64(testMetrics.conversations)
	r := identity(a, t, "alice")
	if node, ok := StateNode(r.State); !ok || node != "dc1-a" || !sharedState(r.State) {
		t.Fatalf("State names %q (%v), shared %v", node, ok, sharedState(r.State))
	}
	if n := testutil.ToFloat64(testMetrics.conversations); n != before {
		t.Errorf("a shared conversation counted in memory: %v, was %v", n, before)
	}
	answer := md5Answer(t, r, "alicepw")
	res := b.Handle(context.Background(), accessRequest(answer, r.State))
	if !res.Accept || res.Subscriber.Username != "alice" {
		t.Fatalf("round 2 on node B: %+v", res)
	}
	// Used: replayed on either node it names nothing.
	for _, s := range []*Server{a, b} {
		if replay := s.Handle(context.Background(), accessRequest(answer, r.State)); replay.Reason != ReasonUnknownState {
			t.Fatalf("replayed State: %+v", replay)
		}
	}
	// A wrong password is refused wherever it lands.
	r = identity(b, t, "alice")
	if res := a.Handle(context.Background(), accessRequest(md5Answer(t, r, "wrong"), r.State)); res.Reason != ReasonBadPassword {
		t.Fatalf("wrong password on the other node: %+v", res)
	}
}

// PEAP proposed on A, the peer's Nak for MD5 on B: B cannot continue a conversation in A's
// memory (unknown_state: TLS-based methods need the owner). With MD5 proposed first, its Nak
// for PEAP continues anywhere, and the TLS conversation it starts stays in that node's memory.
func TestNakAcrossNodes(t *testing.T) {
	st := sharedStore(t)
	a, b := node(t, "dc1-a", st, TypePEAP, TypeMD5), node(t, "dc2-b", st, TypePEAP, TypeMD5)
	r := identity(a, t, "alice")
	if sharedState(r.State) {
		t.Fatal("a PEAP conversation in the shared store")
	}
	if res := b.Handle(context.Background(), accessRequest(response(r.EAP[1], TypeNak, []byte{TypeMD5}), r.State)); res.Reason != ReasonUnknownState {
		t.Fatalf("a PEAP conversation continued off its owner: %+v", res)
	}

	a, b = node(t, "dc1-a", st, TypeMD5, TypePEAP), node(t, "dc2-b", st, TypeMD5, TypePEAP)
	r = identity(a, t, "alice")
	res := b.Handle(context.Background(), accessRequest(response(r.EAP[1], TypeNak, []byte{TypePEAP}), r.State))
	if p, _ := Parse(res.EAP); !res.Challenge || p.Type != TypePEAP || sharedState(res.State) {
		t.Fatalf("Nak for PEAP on node B: %+v", res)
	}
	if node, _ := StateNode(res.State); node != "dc2-b" {
		t.Fatalf("the PEAP conversation is owned by %q, want dc2-b", node)
	}
}

// failing is a store that is down.
type failing struct{}

func (failing) PutEphemeral(context.Context, []byte, []byte, time.Duration) error {
	return errors.New("down")
}
func (failing) TakeEphemeral(context.Context, []byte) ([]byte, error) { return nil, errors.New("down") }

// A store that is down costs the DC hop, not the conversation: the owner keeps it in memory.
func TestSharedStoreDown(t *testing.T) {
	s := node(t, "dc1-a", failing{}, TypeMD5)
	before := testutil.ToFloat64(testMetrics.sharedErrors.WithLabelValues("put"))
	r := identity(s, t, "alice")
	if sharedState(r.State) {
		t.Fatal("a shared State from a store that is down")
	}
	if res := s.Handle(context.Background(), accessRequest(md5Answer(t, r, "alicepw"), r.State)); !res.Accept {
		t.Fatalf("owner could not finish: %+v", res)
	}
	if got := testutil.ToFloat64(testMetrics.sharedErrors.WithLabelValues("put")) - before; got != 1 {
		t.Errorf("put errors counted %v, want 1", got)
	}
	// A shared State whose store cannot be read: state_store_unavailable.
	if res := s.Handle(context.Background(), accessRequest(response(8, TypeMD5, make([]byte, 17)), []byte(newState("dc2-b", stateShared)))); res.Reason != ReasonStateStore {
		t.Fatalf("unreadable store: %+v", res)
	}
}

// recording is a shared store that keeps a copy of every value put.
type recording struct {
	session.Ephemeral
	mu   sync.Mutex
	puts [][]byte
}

func (r *recording) PutEphemeral(ctx context.Context, key, value []byte, ttl time.Duration) error {
	r.mu.Lock()
	r.puts = append(r.puts, append([]byte(nil), value...))
	r.mu.Unlock()
	return r.Ephemeral.PutEphemeral(ctx, key, value, ttl)
}

// noSecret fails t unless values were stored, none of them holding one of secrets.
func (r *recording) noSecret(t *testing.T, secrets [][]byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.puts) == 0 || len(secrets) == 0 {
		t.Fatalf("%d values stored, %d secrets to look for", len(r.puts), len(secrets))
	}
	for _, v := range r.puts {
		for _, k := range secrets {
			if bytes.Contains(v, k) {
				t.Fatalf("a stored value %x holds a secret %x", v, k)
			}
		}
	}
}

// akaSecrets are the keys of a Challenge as the peer computed them, and the card's.
func akaSecrets(typ byte, autn []byte, ks milenage.Keys, keys akaKeys) [][]byte {
	k, _ := hex.DecodeString(akaKi)
	o, _ := hex.DecodeString(akaOPc)
	s := [][]byte{k, o, ks.RES[:], ks.CK[:], ks.IK[:], keys.kAut, keys.msk, keys.emsk}
	if typ == TypeAKAPrime {
		ckP, ikP := ckIKPrime(ks.CK[:], ks.IK[:], "WLAN", autn[:6])
		s = append(s, ckP, ikP)
	}
	return s
}

// EAP-AKA and AKA' conversations whose rounds alternate between two nodes sharing a store
// end with the peer's MSK; the stored values hold no key.
func TestAKAConversationAcrossNodes(t *testing.T) {
	for _, typ := range []byte{TypeAKA, TypeAKAPrime} {
		t.Run(typeName(typ), func(t *testing.T) {
			st := &recording{Ephemeral: sharedStore(t)}
			sqn := &sqnMap{m: map[string]uint64{}}
			who := akaSubscribers()
			a, b := akaNode(t, "dc1-a", st, sqn, who, typ), akaNode(t, "dc2-b", st, sqn, who, typ)
			ctx := context.Background()
			var secrets [][]byte
			perm := "0001010000000001@wlan.mnc001.mcc001.3gppnetwork.org"

			// The Challenge from A, the answer on B.
			r := identity(a, t, perm)
			if !sharedState(r.State) {
				t.Fatal("an AKA conversation not in the store")
			}
			req, _ := Parse(r.EAP)
			_, autn, ks, keys := peerChallenge(t, typ, perm, req)
			secrets = append(secrets, akaSecrets(typ, autn, ks, keys)...)
			res := b.Handle(ctx, accessRequest(challengeResponse(typ, req.ID, ks.RES[:], keys.kAut), r.State))
			if !res.Accept || res.Subscriber.Username != "001010000000001" || !bytes.Equal(res.MSK, keys.msk) {
				t.Fatalf("answer on node B: %+v", res)
			}
			for _, n := range []*Server{a, b} {
				if replay := n.Handle(ctx, accessRequest(challengeResponse(typ, req.ID, ks.RES[:], keys.kAut), r.State)); replay.Reason != ReasonUnknownState {
					t.Fatalf("replayed State: %+v", replay)
				}
			}

			// The identity asked by B, the Challenge from A (keys over AT_IDENTITY), the
			// answer (AnswerAKA's) on B.
			r = identity(b, t, "anonymous@realm")
			req, _ = Parse(r.EAP)
			idResp := response(req.ID, typ, newSim(akaIdentity).attr(atIdentity, withLength([]byte(perm))).b)
			if r = a.Handle(ctx, accessRequest(idResp, r.State)); !r.Challenge || !sharedState(r.State) {
				t.Fatalf("identity answered on node A: %+v", r)
			}
			req, _ = Parse(r.EAP)
			_, autn, ks, keys = peerChallenge(t, typ, perm, req)
			secrets = append(secrets, akaSecrets(typ, autn, ks, keys)...)
			answer, msk, err := AnswerAKA(r.EAP, perm, "WLAN", mustHex(akaKi), mustHex(akaOPc))
			if err != nil || !bytes.Equal(msk, keys.msk) {
				t.Fatalf("AnswerAKA: %v, MSK %x, want %x", err, msk, keys.msk)
			}
			if res := b.Handle(ctx, accessRequest(answer, r.State)); !res.Accept || !bytes.Equal(res.MSK, keys.msk) {
				t.Fatalf("answer on node B: %+v", res)
			}

			// Resynchronisation: the Challenge from A, AUTS on B, the new Challenge (SQN past
			// SQNms) answered on A.
			r = identity(a, t, perm)
			req, _ = Parse(r.EAP)
			rnd, autn, ks, keys := peerChallenge(t, typ, perm, req)
			secrets = append(secrets, akaSecrets(typ, autn, ks, keys)...)
			if r = b.Handle(ctx, accessRequest(syncFailure(typ, req.ID, auts(rnd, 0x5000)), r.State)); !r.Challenge || !sharedState(r.State) {
				t.Fatalf("AUTS on node B: %+v", r)
			}
			req, _ = Parse(r.EAP)
			_, autn, ks, keys = peerChallenge(t, typ, perm, req)
			secrets = append(secrets, akaSecrets(typ, autn, ks, keys)...)
			var sqnNow [6]byte
			subtle.XORBytes(sqnNow[:], autn[:6], ks.AK[:])
			if got := milenage.SQN(sqnNow[:]); got != 0x5001 {
				t.Fatalf("SQN after the resynchronisation %x, want 5001", got)
			}
			res = a.Handle(ctx, accessRequest(challengeResponse(typ, req.ID, ks.RES[:], keys.kAut), r.State))
			if !res.Accept || !bytes.Equal(res.MSK, keys.msk) {
				t.Fatalf("answer on node A after the resynchronisation: %+v", res)
			}

			// A wrong RES, and a Ki changed between the rounds, refused on the other node.
			if res := answerOn(t, typ, perm, a, b, wrongRES); res.Reason != ReasonBadResponse {
				t.Fatalf("wrong RES on node B: %+v", res)
			}
			kiChanged := func(res, kAut []byte) ([]byte, []byte) {
				who["001010000000001"] = &subscriber.Subscriber{Username: "001010000000001", Ki: "000102030405060708090a0b0c0d0e0f", OPc: akaOPc}
				return res, kAut
			}
			if res := answerOn(t, typ, perm, a, b, kiChanged); res.Reason != ReasonBadResponse {
				t.Fatalf("Ki changed between the rounds: %+v", res)
			}
			st.noSecret(t, secrets)
		})
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// EAP-SIM conversations whose three rounds alternate between two nodes end with the peer's
// MSK; a wrong SRES is refused; the stored values hold no key, SRES or Kc.
func TestSIMConversationAcrossNodes(t *testing.T) {
	st := &recording{Ephemeral: sharedStore(t)}
	sqn := &sqnMap{m: map[string]uint64{}}
	a, b := akaNode(t, "dc1-a", st, sqn, akaSubscribers(), TypeSIM), akaNode(t, "dc2-b", st, sqn, akaSubscribers(), TypeSIM)
	var secrets [][]byte
	for _, c := range []struct {
		nodes        []*Server
		id, idAnswer string
	}{
		{[]*Server{a, b}, "1001010000000001@realm", ""},
		{[]*Server{b, a}, "anonymous@realm", "1001010000000001@realm"},
	} {
		r, s := simAcross(t, c.nodes, c.id, c.idAnswer, false)
		if !r.Accept || r.Subscriber.Username != "001010000000001" {
			t.Fatalf("%s: %+v", c.id, r)
		}
		secrets = append(secrets, s...)
	}
	if r, _ := simAcross(t, []*Server{a, b}, "1001010000000001", "", true); r.Reason != ReasonBadResponse {
		t.Fatalf("a wrong SRES on the other node: %+v", r)
	}
	secrets = append(secrets, mustHex(akaKi), mustHex(akaOPc))
	st.noSecret(t, secrets)
}

// Each method's stored value decodes to the same conversation; a value cut short, a stage
// no conversation is in, or random octets are refused (counted), never a panic.
func TestStoredConversations(t *testing.T) {
	s := akaNode(t, "n", nil, &sqnMap{m: map[string]uint64{}}, akaSubscribers(), TypeAKA)
	base := conversation{identity: "anonymous@realm", lastID: 9, rounds: 2, tried: []byte{TypeAKAPrime},
		expires: time.Unix(1700000000, 123)}
	aka := func(typ byte, id string, askedID, resynced, sent bool) *conversation {
		c := base
		c.typ = typ
		c.method = &akaMethod{srv: s, typ: typ, identity: id, askedID: askedID, resynced: resynced, sent: sent,
			rand: [16]byte{1, 2, 3}, sqnAK: [6]byte{4, 5, 6}}
		return &c
	}
	sim := func(id string, askedID, sent bool) *conversation {
		c := base
		c.typ = TypeSIM
		c.method = &simMethod{srv: s, identity: id, askedID: askedID, sent: sent, rands: [48]byte{7, 8}, nonce: [16]byte{9}}
		return &c
	}
	md5 := base
	md5.typ, md5.method = TypeMD5, &md5Method{srv: s, identity: base.identity, challenge: [16]byte{1}}
	perm := "0001010000000001@realm"
	for name, c := range map[string]*conversation{
		"md5": &md5, "aka identity asked": aka(TypeAKA, base.identity, true, false, false),
		"aka challenge": aka(TypeAKA, perm, false, false, true), "aka' resynced": aka(TypeAKAPrime, perm, true, true, true),
		"sim start": sim("1001010000000001", false, false), "sim identity asked": sim(base.identity, true, false),
		"sim challenge": sim("1001010000000001@realm", true, true),
	} {
		b := c.marshal()
		got, err := s.unmarshal(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.identity != c.identity || got.lastID != 9 || got.typ != c.typ || got.rounds != 2 || string(got.tried) != string(c.tried) ||
			!got.expires.Equal(c.expires) || string(got.method.(portable).state()) != string(c.method.(portable).state()) {
			t.Fatalf("%s: round trip %+v", name, got)
		}
		for i := range len(b) - len(c.identity) {
			if _, err := s.unmarshal(b[:i]); err == nil {
				t.Fatalf("%s truncated to %d octets: no error", name, i)
			}
		}
	}
	// Stages no conversation is in: a Challenge to an identity that is not permanent, an
	// unknown flag, a resynchronisation without a Challenge, a Start to no identity asked of
	// an anonymous peer.
	for name, c := range map[string]*conversation{
		"aka challenge, anonymous":   aka(TypeAKA, base.identity, true, false, true),
		"aka resynced, no challenge": aka(TypeAKA, base.identity, true, true, false),
		"aka nothing sent":           aka(TypeAKA, perm, false, false, false),
		"sim start, anonymous":       sim(base.identity, false, false),
		"sim challenge, anonymous":   sim(base.identity, true, true),
	} {
		if _, err := s.unmarshal(c.marshal()); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	b := aka(TypeAKA, perm, false, false, true).marshal()
	b[5+1+8+2] |= 0x80 // the stage octet
	if _, err := s.unmarshal(b); err == nil {
		t.Error("an unknown stage flag decoded")
	}
	// Format 1 (one octet of state length, MD5 only) is still read; not for another method.
	v1 := append([]byte{1, 9, TypeMD5, 1, 0}, make([]byte, 8)...)
	v1 = append(append(append(v1, 16), make([]byte, 16)...), "alice"...)
	if c, err := s.unmarshal(v1); err != nil || c.identity != "alice" {
		t.Fatalf("format 1: %+v %v", c, err)
	}
	v1[2] = TypeAKA
	if _, err := s.unmarshal(v1); err == nil {
		t.Error("format 1 with AKA decoded")
	}
	// Random octets, with and without a good header.
	buf := make([]byte, 200)
	for i := range 3000 {
		n, _ := rand.Read(buf[:i%len(buf)])
		if i%2 == 0 && n > 16 {
			buf[0], buf[2], buf[4] = conversationFormat, []byte{TypeMD5, TypeSIM, TypeAKA, TypeAKAPrime}[i%4], 0
			binary.BigEndian.PutUint16(buf[13:], uint16(i%120))
		}
		_, _ = s.unmarshal(buf[:n])
	}
}

// A stored value that does not decode ends the round (internal_error), counted; no panic.
func TestStoredConversationGarbage(t *testing.T) {
	st := sharedStore(t)
	s := akaNode(t, "dc1-a", st, &sqnMap{m: map[string]uint64{}}, akaSubscribers(), TypeAKA)
	good := identity(s, t, "0001010000000001")
	stored, err := st.TakeEphemeral(context.Background(), good.State)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]byte{stored[:len(stored)/2], {2, 7}, append([]byte{3}, stored[1:]...), {}} {
		state := []byte(newState("dc2-b", stateShared))
		if err := st.PutEphemeral(context.Background(), state, v, time.Minute); err != nil {
			t.Fatal(err)
		}
		before := testutil.ToFloat64(testMetrics.sharedErrors.WithLabelValues("decode"))
		if r := s.Handle(context.Background(), accessRequest(response(good.EAP[1], TypeAKA, []byte{akaChallenge, 0, 0}), state)); r.Reason != ReasonInternal {
			t.Fatalf("stored %x: %+v", v, r)
		}
		if got := testutil.ToFloat64(testMetrics.sharedErrors.WithLabelValues("decode")) - before; got != 1 {
			t.Fatalf("stored %x: %v decode errors counted, want 1", v, got)
		}
	}
}
