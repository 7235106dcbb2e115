package gx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiorix/go-diameter/v4/diam"
	"github.com/fiorix/go-diameter/v4/diam/avp"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
	"github.com/openaaa/openaaa/services/policing/internal/subscriber"
)

// A session throttled before Session.GxThrottled, marked with the RADIUS field
// DisconnectReason "quota" (here in the embedded store's snapshot of an older version), is still
// throttled: its next CCR-U is applied, and its CCA-U changes no rule and throttles nothing again.
func TestLegacyThrottledSession(t *testing.T) {
	if err := LoadDictionary(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sid := "pgw.test;legacy;1"
	at := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	snap := filepath.Join(dir, "snapshot.jsonl")
	content := `{"format":"openaaa-sessions/v1","active":1,"history":0}` + "\n" + fmt.Sprintf(
		`{"nas":"gx","acctSessionId":%q,"userName":"001010000000001","state":"active","startTime":%q,"lastSeen":%q,"outputOctets":1000,"updates":3,"interimInterval":86400,"disconnectReason":"quota"}`,
		sid, at, at) + "\n"
	subs := filepath.Join(dir, "subscribers.yaml")
	for f, b := range map[string]string{snap: content, subs: subscribersYAML} {
		if err := os.WriteFile(f, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := embedded.Open(embedded.Options{Shards: 4, HistorySize: 100, SweepInterval: time.Hour, SnapshotFile: snap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	src, err := subscriber.OpenFile(subs, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, h := serveOn(t, st, src, nil, "pcrf.test", "pgw.test")
	var throttled atomic.Int32
	h.Throttled = func(*subscriber.Subscriber) { throttled.Add(1) }
	r := dialRig(t, st, addr)
	a := r.send(ccr(sid, Update, 3, usedOctets(10)))
	if code := r.code(a); code != diam.Success || len(ruleNames(t, a, avp.ChargingRuleInstall)) != 0 || len(ruleNames(t, a, avp.ChargingRuleRemove)) != 0 {
		t.Fatalf("CCA-U of a session throttled the old way: %d, +%v -%v; want 2001 and no rule change", code,
			ruleNames(t, a, avp.ChargingRuleInstall), ruleNames(t, a, avp.ChargingRuleRemove))
	}
	if n := throttled.Load(); n != 0 {
		t.Fatalf("throttled again (%d)", n)
	}
	s, err := st.Get(context.Background(), session.Key{NAS: NAS, ID: sid})
	if err != nil || !s.GxThrottled || s.OutputOctets != 1010 {
		t.Fatalf("session = %+v, %v; want throttled, its usage applied (1010 octets)", s, err)
	}
}
