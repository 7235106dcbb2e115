package cassandra_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/internal/cassandratest"
	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/cassandra"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// eap_state (migration 0009): a value is read once, and not after its TTL.
func TestEphemeral(t *testing.T) {
	cassandratest.Skip(t, cluster)
	st := migratedStore(t, cassandra.Options{})
	c := ctx(t)
	if err := st.PutEphemeral(c, []byte("k1"), []byte("v1"), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if v, err := st.TakeEphemeral(c, []byte("k1")); err != nil || string(v) != "v1" {
		t.Fatalf("take: %q %v", v, err)
	}
	if _, err := st.TakeEphemeral(c, []byte("k1")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("second take: %v, want ErrNotFound", err)
	}
	if err := st.PutEphemeral(c, []byte("k2"), []byte("v2"), time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := st.TakeEphemeral(c, []byte("k2")); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("take after the TTL: %v, want ErrNotFound", err)
	}
}

type oneSubscriber struct{}

// The USIM of IMSI 001010000000001 (eap's tests use the same card).
const (
	usimKi  = "465b5ce8b199b49faa5f0a2ee238a6bc"
	usimOPc = "cd63cb71954a9f4e48a5994e37a02baf"
)

func (oneSubscriber) Lookup(_ context.Context, user string) (*subscriber.Subscriber, error) {
	switch user {
	case "alice":
		return &subscriber.Subscriber{Username: "alice", Password: "alicepw"}, nil
	case "001010000000001":
		return &subscriber.Subscriber{Username: user, Ki: usimKi, OPc: usimOPc, SQN: "000000000010"}, nil
	}
	return nil, subscriber.ErrNotFound
}

// eapRound is an Access-Request carrying one EAP Response (short: one EAP-Message).
func eapRound(code, id, typ byte, data, state []byte) *radius.Packet {
	p := radius.New(radius.CodeAccessRequest, []byte("secret"))
	msg := append([]byte{code, id, 0, byte(5 + len(data)), typ}, data...)
	p.Add(rfc2869.EAPMessage_Type, msg)
	if state != nil {
		p.Add(rfc2865.State_Type, state)
	}
	return p
}

// An EAP-MD5 conversation whose two rounds go to two policing nodes, each with its own
// connection to the keyspace (hybrid stores, as in two DCs): node A sends the challenge, node B
// checks the answer and accepts; the State is then used up on both.
func TestEAPConversationAcrossNodes(t *testing.T) {
	cassandratest.Skip(t, cluster)
	nodes := twoNodes(t, eap.TypeMD5)
	c := ctx(t)
	r, req := begin(t, c, nodes[0], "alice", eap.TypeMD5)
	if owner, _ := eap.StateNode(r.State); owner != "dc1-a" {
		t.Fatalf("State owner %q", owner)
	}
	h := md5.New()
	h.Write([]byte{req.ID})
	h.Write([]byte("alicepw"))
	h.Write(req.Data[1:17])
	answer := eapRound(eap.CodeResponse, req.ID, eap.TypeMD5, append([]byte{16}, h.Sum(nil)...), r.State)
	if res := nodes[1].Handle(c, answer); !res.Accept || res.Subscriber.Username != "alice" {
		t.Fatalf("round 2 on node B: %+v", res)
	}
	usedUp(t, c, nodes, answer)
}

// An EAP-AKA conversation whose rounds go to two nodes with their own hybrid stores: node A
// asks the permanent identity, node B sends the Challenge (its SQN from the keyspace's
// counter), node A checks the answer with the keys it recomputed and accepts with the MSK the
// peer derived; the State is then used up on both.
func TestEphemeralAKAAcrossNodes(t *testing.T) {
	cassandratest.Skip(t, cluster)
	nodes := twoNodes(t, eap.TypeAKA)
	c := ctx(t)
	r, req := begin(t, c, nodes[0], "anonymous@realm", eap.TypeAKA)
	perm := "0001010000000001@realm"
	// AKA-Identity with AT_IDENTITY (type 14: actual length, the identity, padding).
	id := append([]byte{5, 0, 0, 14, byte((4 + len(perm) + 3) / 4), 0, byte(len(perm))}, perm...)
	id = append(id, make([]byte, (4-len(perm)%4)%4)...)
	r = nodes[1].Handle(c, eapRound(eap.CodeResponse, req.ID, eap.TypeAKA, id, r.State))
	if !r.Challenge {
		t.Fatalf("round 2 on node B: %+v", r)
	}
	ki, _ := hex.DecodeString(usimKi)
	opc, _ := hex.DecodeString(usimOPc)
	answer, msk, err := eap.AnswerAKA(r.EAP, perm, "WLAN", ki, opc)
	if err != nil {
		t.Fatal(err)
	}
	round3 := eapRound(answer[0], answer[1], answer[4], answer[5:], r.State)
	if res := nodes[0].Handle(c, round3); !res.Accept || res.Subscriber.Username != "001010000000001" || !bytes.Equal(res.MSK, msk) {
		t.Fatalf("round 3 on node A: %+v", res)
	}
	usedUp(t, c, nodes, round3)
}

// twoNodes are two EAP servers offering methods, each with its own hybrid store on a fresh
// keyspace (conversations and the SQN counter), as two policing nodes in two DCs.
func twoNodes(t *testing.T, methods ...byte) []*eap.Server {
	t.Helper()
	ks := keyspace(t)
	migrateKS(t, ks)
	nodes := make([]*eap.Server, 2)
	for i, name := range []string{"dc1-a", "dc2-b"} {
		st := cassandra.NewHybrid(openStore(t, ks, cassandra.Options{}), 100, time.Minute)
		t.Cleanup(func() { st.Close(context.Background()) })
		nodes[i] = eap.New(eap.Options{Methods: methods, NodeID: name, MaxConversations: 10, Timeout: 30 * time.Second,
			RoundTimeout: 5 * time.Second, Subscribers: oneSubscriber{}, SQN: st, AKANetworkName: "WLAN",
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Shared: st})
		t.Cleanup(nodes[i].Close)
	}
	return nodes
}

// begin sends an EAP-Response/Identity to n, which must answer with a Request of method typ.
func begin(t *testing.T, c context.Context, n *eap.Server, identity string, typ byte) (eap.Result, eap.Packet) {
	t.Helper()
	r := n.Handle(c, eapRound(eap.CodeResponse, 7, eap.TypeIdentity, []byte(identity), nil))
	req, err := eap.Parse(r.EAP)
	if !r.Challenge || err != nil || req.Type != typ {
		t.Fatalf("round 1: %+v (%v)", r, err)
	}
	return r, req
}

// usedUp: the last round, replayed on any node, names no conversation.
func usedUp(t *testing.T, c context.Context, nodes []*eap.Server, last *radius.Packet) {
	t.Helper()
	for i, n := range nodes {
		if res := n.Handle(c, last); res.Reason != eap.ReasonUnknownState {
			t.Fatalf("State replayed on node %d: %+v", i, res)
		}
	}
}
