package aaa

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"

	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/nas"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
)

// Accounting acts only on the sessions of the client that sent it: a NAS that names another
// client's NAS-IP-Address can neither close (Accounting-On/Off) nor overwrite or stop
// (Start, Interim, Stop) that client's sessions. Its own sessions it closes as before.
func TestAccountingStaysWithinItsClient(t *testing.T) {
	ctx := context.Background()
	st, err := embedded.Open(embedded.Options{Shards: 4, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	sec := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(sec, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	tab, err := nas.Build([]config.Client{{Name: "nas-a", Address: "192.0.2.1", SecretFile: sec}, {Name: "nas-b", Address: "192.0.2.2", SecretFile: sec}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := tab.Match(netip.MustParseAddr("192.0.2.1"), nil), tab.Match(netip.MustParseAddr("192.0.2.2"), nil)
	h := acctHandler(st, &fakeSource{})
	send := func(c *nas.Client, status rfc2866.AcctStatusType, id, nasIP, user string) {
		t.Helper()
		r := acctRequest(status, id, func(p *radius.Packet) {
			_ = rfc2865.NASIPAddress_Set(p, net.ParseIP(nasIP))
			rfc2865.UserName_SetString(p, user)
		})
		r.Client = c
		r.RemoteAddr = netip.AddrPortFrom(c.Prefix.Addr(), 40000)
		w := &recWriter{}
		h.ServeRADIUS(w, r)
		if len(w.replies) != 1 {
			t.Fatalf("%s from %s not acknowledged", statusNames[uint32(status)], c.Name)
		}
	}
	active := func(k session.Key) *session.Session {
		t.Helper()
		s, err := st.Get(ctx, k)
		if errors.Is(err, session.ErrNotFound) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	bKey := session.Key{NAS: "192.0.2.2", ID: "b-1"}
	aKey := session.Key{NAS: "192.0.2.1", ID: "a-1"}
	send(b, rfc2866.AcctStatusType_Value_Start, "b-1", "192.0.2.2", "bob")
	send(a, rfc2866.AcctStatusType_Value_Start, "a-1", "192.0.2.1", "alice")
	if active(bKey) == nil || active(aKey) == nil {
		t.Fatal("sessions not stored under their NAS-IP-Address")
	}

	// nas-a names nas-b's address: Accounting-On, Stop and Interim of b-1.
	send(a, rfc2866.AcctStatusType_Value_AccountingOn, "", "192.0.2.2", "")
	send(a, rfc2866.AcctStatusType_Value_AccountingOff, "", "192.0.2.2", "")
	send(a, rfc2866.AcctStatusType_Value_InterimUpdate, "b-1", "192.0.2.2", "mallory")
	send(a, rfc2866.AcctStatusType_Value_Stop, "b-1", "192.0.2.2", "mallory")
	s := active(bKey)
	if s == nil {
		t.Fatal("nas-a closed nas-b's session by naming its NAS-IP-Address")
	}
	if s.UserName != "bob" || s.ClientName != "nas-b" || s.Updates != 1 {
		t.Fatalf("nas-a overwrote nas-b's session: %+v", s)
	}
	if active(aKey) == nil {
		t.Fatal("nas-a's Accounting-On for another address closed its own session")
	}

	// Each client's own Accounting-On closes its own sessions, and only those.
	send(b, rfc2866.AcctStatusType_Value_AccountingOn, "", "192.0.2.2", "")
	if active(bKey) != nil {
		t.Fatal("nas-b's Accounting-On left its session")
	}
	if active(aKey) == nil {
		t.Fatal("nas-b's Accounting-On closed nas-a's session")
	}
	send(a, rfc2866.AcctStatusType_Value_AccountingOn, "", "192.0.2.1", "")
	if active(aKey) != nil {
		t.Fatal("nas-a's Accounting-On left its session")
	}
}
