package gx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"
	"github.com/fiorix/go-diameter/v4/diam/datatype"
	"github.com/fiorix/go-diameter/v4/diam/dict"

	"github.com/openaaa/openaaa/services/policing/internal/diameter"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

// A RAR leaves over the PCEF's connection to this node with the rules to change, and the
// RAA's Result-Code comes back; a session whose PCEF connection another node holds is refused.
func TestRAR(t *testing.T) {
	st, addr, h := newServerWith(t, nil, subscribersYAML, "pgw.test")
	r := dialRig(t, st, addr)
	sid := "pgw.test;rar;1"
	if code := r.code(r.send(ccr(sid, Initial, 0, initialAVPs()...))); code != diam.Success {
		t.Fatalf("CCA-I %d", code)
	}
	type result struct {
		code uint32
		err  error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		code, err := h.RAR(ctx, sid, []string{"gold-boost"}, []string{"internet"})
		done <- result{code, err}
	}()
	req, err := diam.ReadMessage(r.conn, dict.Default)
	if err != nil {
		t.Fatal(err)
	}
	if req.Header.CommandCode != diam.ReAuth || req.Header.CommandFlags&diam.RequestFlag == 0 {
		t.Fatalf("got %s, want a RAR", req)
	}
	if got := ruleNames(t, req, avp.ChargingRuleInstall); len(got) != 1 || got[0] != "gold-boost" {
		t.Fatalf("RAR installs %v", got)
	}
	if s, _ := req.FindAVP(avp.SessionID, 0); s == nil || string(s.Data.(datatype.UTF8String)) != sid {
		t.Fatal("RAR without the session's Session-Id")
	}
	raa := diameter.Identity{Host: "pgw.test", Realm: "test"}.Answer(req, diam.Success)
	if _, err := raa.WriteTo(r.conn); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.err != nil || res.code != diam.Success {
		t.Fatalf("RAR: %d, %v", res.code, res.err)
	}
	// Another node holds the PCEF's connection.
	if _, err := st.Apply(context.Background(), &session.Update{Kind: session.KindStart, Session: session.Session{
		Key: session.Key{NAS: NAS, ID: "pgw.test;rar;2"}, UserName: "x", ClientName: "pcrf.other", NASIdentifier: "pgw.test"}}, session.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.RAR(context.Background(), "pgw.test;rar;2", []string{"a"}, nil); !errors.Is(err, ErrElsewhere) {
		t.Fatalf("RAR for a connection held elsewhere: %v", err)
	}
	if _, err := h.RAR(context.Background(), "pgw.test;none", []string{"a"}, nil); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("RAR for no session: %v", err)
	}
}
