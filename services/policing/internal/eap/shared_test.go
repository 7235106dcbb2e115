package eap

import (
	"context"
	"crypto/md5"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
)

// node is a server named id sharing store with the others (nil: none), as the policing
// nodes of several DCs share one Cassandra keyspace.
func node(t *testing.T, id string, store session.Ephemeral, methods ...byte) *Server {
	t.Helper()
	cfg := selfSigned(t)
	s := New(Options{Methods: methods, NodeID: id, MaxConversations: 100, Timeout: 30 * time.Second,
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
	before := testutil.ToFloat64(conversations)
	r := identity(a, t, "alice")
	if node, ok := StateNode(r.State); !ok || node != "dc1-a" || !sharedState(r.State) {
		t.Fatalf("State names %q (%v), shared %v", node, ok, sharedState(r.State))
	}
	if n := testutil.ToFloat64(conversations); n != before {
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
	before := testutil.ToFloat64(sharedErrors.WithLabelValues("put"))
	r := identity(s, t, "alice")
	if sharedState(r.State) {
		t.Fatal("a shared State from a store that is down")
	}
	if res := s.Handle(context.Background(), accessRequest(md5Answer(t, r, "alicepw"), r.State)); !res.Accept {
		t.Fatalf("owner could not finish: %+v", res)
	}
	if got := testutil.ToFloat64(sharedErrors.WithLabelValues("put")) - before; got != 1 {
		t.Errorf("put errors counted %v, want 1", got)
	}
	// A shared State whose store cannot be read: state_store_unavailable.
	if res := s.Handle(context.Background(), accessRequest(response(8, TypeMD5, make([]byte, 17)), []byte(newState("dc2-b", stateShared)))); res.Reason != ReasonStateStore {
		t.Fatalf("unreadable store: %+v", res)
	}
}

func TestConversationRoundTrip(t *testing.T) {
	s := node(t, "n", nil, TypeMD5)
	c := &conversation{identity: "alice@example.net", lastID: 9, typ: TypeMD5, rounds: 1, tried: []byte{TypePEAP, TypeMD5},
		expires: time.Unix(1700000000, 123), method: &md5Method{srv: s, identity: "alice@example.net", challenge: [16]byte{1, 2, 3}}}
	got, err := s.unmarshal(c.marshal())
	if err != nil {
		t.Fatal(err)
	}
	m := got.method.(*md5Method)
	if got.identity != c.identity || got.lastID != 9 || got.typ != TypeMD5 || got.rounds != 1 || string(got.tried) != string(c.tried) ||
		!got.expires.Equal(c.expires) || m.challenge != [16]byte{1, 2, 3} || m.identity != c.identity {
		t.Fatalf("round trip: %+v", got)
	}
	b := c.marshal()
	for i := range len(b) - len(c.identity) {
		if _, err := s.unmarshal(b[:i]); err == nil {
			t.Fatalf("truncated to %d octets: no error", i)
		}
	}
}
