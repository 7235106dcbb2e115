package admin

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
)

const testToken = "admin-test-token-0123456789"

// GET /api/v1/sessions?ip= finds a session by its IPv4 framed address, or by an IPv6
// address or prefix inside its delegated or framed prefix (longest match); a bad ip is a
// 400 naming the parameter.
func TestSessionsByIP(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	srv := serveSessions(t,
		session.Session{Key: session.Key{NAS: "bng", ID: "pd"}, UserName: "alice", FramedIP: netip.MustParseAddr("10.0.0.1"),
			DelegatedIPv6Prefix: netip.MustParsePrefix("2001:db8:100:ab00::/56"), LastSeen: at},
		session.Session{Key: session.Key{NAS: "bng", ID: "wide"}, UserName: "bob", DelegatedIPv6Prefix: netip.MustParsePrefix("2001:db8:100::/48"), LastSeen: at})
	get := func(param, q string) (int, string, []string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/sessions?"+param+"="+url.QueryEscape(q), nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var r struct{ Sessions []*session.Session }
		_ = json.Unmarshal(raw, &r)
		var ids []string
		for _, s := range r.Sessions {
			ids = append(ids, s.ID)
		}
		return resp.StatusCode, string(raw), ids
	}
	for q, want := range map[string]string{
		"10.0.0.1":               "pd",
		"2001:db8:100:ab12::1":   "pd",
		"2001:db8:100:ab00::/56": "pd",
		"2001:db8:100:ac00::1":   "wide",
		"2001:db8:100::/52":      "wide",
		"::ffff:10.0.0.1":        "pd",
		"2001:db8:200::1":        "",
		"10.0.0.2":               "",
	} {
		for _, param := range []string{"ip", "framedIp"} {
			code, body, ids := get(param, q)
			if code != 200 || strings.Join(ids, ",") != want {
				t.Errorf("%s=%s: %d %v, want [%s]\n%s", param, q, code, ids, want, body)
			}
		}
	}
	for _, bad := range []string{"nonsense", "10.0.0.0/8", "fe80::1%eth0", "2001:db8::/129"} {
		if code, body, _ := get("ip", bad); code != http.StatusBadRequest || !strings.Contains(body, `"ip: `) {
			t.Errorf("ip=%s: %d %s, want 400 naming ip", bad, code, body)
		}
	}
}

// GET /api/v1/sessions?msisdn= (callingStationId=) finds a subscriber's sessions by its
// Calling-Station-Id, RADIUS and Gx alike; &apn= (calledStationId=) keeps those on one APN.
func TestSessionsByCallingStation(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	srv := serveSessions(t,
		session.Session{Key: session.Key{NAS: "pgw", ID: "r1"}, UserName: "001010000000001", CallingStationID: "46700000001", CalledStationID: "internet", LastSeen: at},
		session.Session{Key: session.Key{NAS: session.GxNAS, ID: "pgw;1"}, UserName: "001010000000001", CallingStationID: "46700000001", CalledStationID: "ims", LastSeen: at},
		session.Session{Key: session.Key{NAS: "pgw", ID: "r2"}, UserName: "001010000000002", CallingStationID: "46700000002", CalledStationID: "ims", LastSeen: at})
	for query, want := range map[string]string{
		"msisdn=46700000001":                                    "pgw;1,r1",
		"callingStationId=46700000001":                          "pgw;1,r1",
		"msisdn=46700000001&apn=ims":                            "pgw;1",
		"callingStationId=46700000001&calledStationId=internet": "r1",
		"user=001010000000002&apn=ims":                          "r2",
		"msisdn=46700000003":                                    "",
		"nas=" + session.GxNAS:                                  "",
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/sessions?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var r struct{ Sessions []*session.Session }
		_ = json.Unmarshal(raw, &r)
		var ids []string
		for _, s := range r.Sessions {
			ids = append(ids, s.ID)
		}
		slices.Sort(ids)
		if resp.StatusCode != 200 || strings.Join(ids, ",") != want {
			t.Errorf("?%s: %d %v, want [%s]\n%s", query, resp.StatusCode, ids, want, raw)
		}
	}
}

// serveSessions serves the admin API on an embedded store holding sessions (Starts).
func serveSessions(t *testing.T, sessions ...session.Session) *httptest.Server {
	t.Helper()
	st, err := embedded.Open(embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	for _, s := range sessions {
		if _, err := st.Apply(context.Background(), &session.Update{Kind: session.KindStart, Session: s}, session.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tok := &Token{}
	tok.Set([]byte(testToken))
	srv := httptest.NewServer((&Server{Store: st, Token: tok, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: testMetrics}).Handler())
	t.Cleanup(srv.Close)
	return srv
}
