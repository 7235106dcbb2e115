package aaa

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"

	"github.com/openaaa/openaaa/services/policing/internal/eap"
	"github.com/openaaa/openaaa/services/policing/internal/eapforward"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
)

// A round forwarded by another node is served as the NAS it names (its client entry here:
// the auth log's NAS is that client's NAS-Identifier, not the forwarding port's client);
// a verified request that is not a forwarded EAP round gets no answer and is counted.
func TestForwardedEAPServedAsTheNAS(t *testing.T) {
	fl := &fakeAuthLogger{}
	h := authHandler(&fakeSource{})
	h.EAP = eap.New(eap.Options{Methods: []byte{eap.TypeMD5}, NodeID: "node-b", MaxConversations: 10, Timeout: 30 * time.Second,
		RoundTimeout: time.Second, Log: quiet()})
	defer h.EAP.Close()
	h.AuthLog = NewAuthLog(fl, AuthLogOptions{Queue: 4, Workers: 1, Metrics: testMetrics})
	wifi := &nas.Client{Name: "wifi", Prefix: netip.MustParsePrefix("192.0.2.0/24"), NASIdentifier: "ap-17", Secret: []byte("nas")}
	table := nas.NewTable(wifi)
	handler := h.ForwardedEAP(func() *nas.Table { return table })
	peer := &nas.Client{Name: "eap-forward", Secret: secret, RequireMA: true}

	// A round of a conversation node-b no longer has: refused, logged as the NAS's.
	r := newRequest(radius.CodeAccessRequest, func(p *radius.Packet) {
		_ = rfc2865.UserName_SetString(p, "alice")
		p.Add(rfc2869.EAPMessage_Type, radius.Attribute{eap.CodeResponse, 3, 0, 6, eap.TypeNak, eap.TypeTLS})
		p.Add(rfc2865.State_Type, radius.Attribute("OA\x01\x06node-b0123456789abcdef"))
		p.Add(eapforward.TypeForwardedClient, radius.Attribute("wifi"))
	})
	r.Client = peer
	w := &recWriter{}
	handler.ServeRADIUS(w, r)
	if len(w.replies) != 1 || w.replies[0].Code != radius.CodeAccessReject {
		t.Fatalf("replies %v", w.replies)
	}
	if err := h.AuthLog.Close(context.Background()); err != nil { // written
		t.Fatal(err)
	}
	if recs := fl.records(); len(recs) != 1 {
		t.Fatalf("%d auth records", len(recs))
	}
	if rec := fl.records()[0]; rec.NAS != "ap-17" || rec.UserName != "alice" || rec.Reason != "eap: "+string(eap.ReasonUnknownState) {
		t.Fatalf("auth record %+v: want the NAS ap-17", rec)
	}

	// Verified under the inter-node secret, but without the NAS's name: dropped.
	malformed := testutil.ToFloat64(testMetrics.shared.Dropped.WithLabelValues(metrics.DropMalformed))
	r = newRequest(radius.CodeAccessRequest, func(p *radius.Packet) {
		p.Add(rfc2869.EAPMessage_Type, radius.Attribute{eap.CodeResponse, 1, 0, 6, eap.TypeIdentity, 'a'})
	})
	r.Client = peer
	w = &recWriter{}
	handler.ServeRADIUS(w, r)
	if len(w.replies) != 0 || testutil.ToFloat64(testMetrics.shared.Dropped.WithLabelValues(metrics.DropMalformed)) != malformed+1 {
		t.Fatalf("answered %d, malformed counted %v", len(w.replies), testutil.ToFloat64(testMetrics.shared.Dropped.WithLabelValues(metrics.DropMalformed))-malformed)
	}
}
