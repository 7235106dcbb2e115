package app_test

// The policing node with LDAP subscriber profiles, against a real OpenLDAP slapd
// (hack/slapd.sh: hand-written slapd.conf, back_mdb, subscribers loaded with ldapadd).

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2866"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/app"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
	"github.com/openaaa/openaaa/services/policing/internal/testslapd"
)

const ldapSecret = "ldap-test-secret"

// ldapNode starts a node whose subscribers come from srv; extra is YAML under subscribers.ldap.
func ldapNode(t *testing.T, srv *testslapd.Server, extra string) *app.Node {
	t.Helper()
	dir := t.TempDir()
	apptest.Check(t, os.WriteFile(filepath.Join(dir, "secret"), []byte(ldapSecret+"\n"), 0o600))
	return app.StartYAML(t, dir, `
log: {level: debug, format: text}
radius: {authAddress: "127.0.0.1:0", acctAddress: "127.0.0.1:0", workers: 8}
admin: {address: "127.0.0.1:0"}
clients:
  - {name: lo, address: 127.0.0.0/8, secretFile: "{{dir}}/secret"}
subscribers:
  source: ldap
  ldap:
    urls: ["`+srv.URL+`"]
    bindDN: "`+srv.BindDN+`"
    bindPasswordFile: "`+srv.BindPasswordFile+`"
    baseDN: "`+srv.BaseDN+`"
    filter: "(&(objectClass=openaaaSubscriber)(uid={username}))"
`+extra)
}

// ldapAcctStart is an Accounting-Start from a NAS of the LDAP nodes' clients.
func ldapAcctStart(id, user string) *radius.Packet {
	return apptest.Acct(ldapSecret, rfc2866.AcctStatusType_Value_Start, id, user, net.IPv4(192, 0, 2, 7))
}

func TestLDAPAuthWithProfiles(t *testing.T) {
	srv := testslapd.Start(t, 3000) // "a few thousand subscribers loaded with ldapadd"
	n := ldapNode(t, srv, "    poolSize: 4\n")

	reply, err := apptest.Send(n.Addr("radius.authAddress"), apptest.PAP(ldapSecret, "user01234", "pw01234"), 2*time.Second)
	apptest.Check(t, err)
	// The profile from LDAP; Framed-MTU is an openaaaReplyAttribute, the rate limit openaaaRateLimit.
	apptest.WantProfile(t, reply, apptest.Profile{FramedIP: "10.64.4.210", SessionTimeout: 3600, Interim: 300, FramedMTU: 1492, Class: "ldap-silver"})
	for _, c := range []struct{ user, pass, why string }{
		{"user01234", "wrong", "wrong password"},
		{"user00100", "pw00100", "disabled in LDAP"},
		{"user99999", "x", "not in LDAP"},
		{"*", "pw00001", "filter wildcard"},
	} {
		reply, err := apptest.Send(n.Addr("radius.authAddress"), apptest.PAP(ldapSecret, c.user, c.pass), 2*time.Second)
		apptest.Check(t, err)
		if reply.Code != radius.CodeAccessReject {
			t.Errorf("%s (%s): %v, want Access-Reject", c.user, c.why, reply.Code)
		}
	}
	// A real RADIUS client sees the LDAP profile too.
	out := apptest.RadclientPAP(t, n.Addr("radius.authAddress").String(), ldapSecret, "user00007", "pw00007", 1, 2)
	if !strings.Contains(out, "Access-Accept") || !strings.Contains(out, "10.64.0.7") || !strings.Contains(out, "0x6c6461702d676f6c64") /* Class "ldap-gold" */ {
		t.Errorf("radclient:\n%s", out)
	}
	// Accounting finds the profile in the cache (it never asks LDAP).
	before := app.Metric(t, n, `openaaa_ldap_cache_only_lookups_total{result="hit"}`)
	reply, err = apptest.Send(n.Addr("radius.acctAddress"), ldapAcctStart("ldap-s1", "user01234"), 2*time.Second)
	apptest.Check(t, err)
	if reply.Code != radius.CodeAccountingResponse {
		t.Fatalf("accounting: %v", reply.Code)
	}
	if d := app.Metric(t, n, `openaaa_ldap_cache_only_lookups_total{result="hit"}`) - before; d != 1 {
		t.Errorf("accounting cache hits +%v, want +1", d)
	}
	if v := app.Metric(t, n, `openaaa_transactions_total{kind="ldap"}`); v < 5 {
		t.Errorf("ldap transactions = %v", v)
	}
	if v := app.Metric(t, n, `openaaa_ldap_up`); v != 1 {
		t.Errorf("openaaa_ldap_up = %v", v)
	}
}

// slapd stopped: a node allowed to serve stale profiles accepts cached subscribers, one that
// is not rejects them, both at once; accounting is answered without waiting; after slapd is
// back, auth reads LDAP again.
func TestLDAPOutageAuthAndRecovery(t *testing.T) {
	srv := testslapd.Start(t, 50)
	// Long LDAP timeouts: a request that waited for one would stand out against the bound below.
	common := "    timeout: 3s\n    connectTimeout: 3s\n    retryInterval: 300ms\n"
	stale := ldapNode(t, srv, common+"    cache: {ttl: 300ms, serveStale: true}\n")
	strict := ldapNode(t, srv, common+"    cache: {ttl: 300ms, serveStale: false}\n")
	for _, n := range []*app.Node{stale, strict} {
		reply, err := apptest.Send(n.Addr("radius.authAddress"), apptest.PAP(ldapSecret, "user00001", "pw00001"), 2*time.Second)
		apptest.Check(t, err)
		if reply.Code != radius.CodeAccessAccept {
			t.Fatalf("before the outage: %v", reply.Code)
		}
	}
	srv.Stop(t)
	time.Sleep(400 * time.Millisecond) // past the cache TTL
	staleBefore := app.Metric(t, stale, `openaaa_ldap_cache_lookups_total{result="stale"}`)
	unavailBefore := app.Metric(t, strict, `openaaa_ldap_cache_lookups_total{result="unavailable"}`)
	var worst time.Duration
	for i := range 10 {
		start := time.Now()
		reply, err := apptest.Send(stale.Addr("radius.authAddress"), apptest.PAP(ldapSecret, "user00001", "pw00001"), 2*time.Second)
		apptest.Check(t, err)
		if reply.Code != radius.CodeAccessAccept || rfc2865.FramedIPAddress_Get(reply).String() != "10.64.0.1" {
			t.Fatalf("serveStale node, request %d: %v (profile %v)", i, reply.Code, rfc2865.FramedIPAddress_Get(reply))
		}
		reply, err = apptest.Send(stale.Addr("radius.authAddress"), apptest.PAP(ldapSecret, "user00001", "bad"), 2*time.Second)
		apptest.Check(t, err)
		if reply.Code != radius.CodeAccessReject {
			t.Fatalf("stale profile accepted a wrong password")
		}
		reply, err = apptest.Send(strict.Addr("radius.authAddress"), apptest.PAP(ldapSecret, "user00001", "pw00001"), 2*time.Second)
		apptest.Check(t, err)
		if reply.Code != radius.CodeAccessReject {
			t.Fatalf("strict node, request %d: %v, want Access-Reject", i, reply.Code)
		}
		reply, err = apptest.Send(stale.Addr("radius.authAddress"), apptest.PAP(ldapSecret, "user00002", "pw00002"), 2*time.Second)
		apptest.Check(t, err)
		if reply.Code != radius.CodeAccessReject {
			t.Fatalf("uncached subscriber during the outage: %v, want Access-Reject", reply.Code)
		}
		reply, err = apptest.Send(strict.Addr("radius.acctAddress"), ldapAcctStart("outage-"+string(rune('a'+i)), "user00001"), 2*time.Second)
		apptest.Check(t, err)
		if reply.Code != radius.CodeAccountingResponse {
			t.Fatalf("accounting during the outage: %v", reply.Code)
		}
		worst = max(worst, time.Since(start))
	}
	t.Logf("outage: 5 requests (stale accept, wrong password, strict reject, uncached reject, accounting) in at most %v", worst)
	if worst > time.Second {
		t.Errorf("requests during the LDAP outage took up to %v", worst)
	}
	if d := app.Metric(t, stale, `openaaa_ldap_cache_lookups_total{result="stale"}`) - staleBefore; d < 10 {
		t.Errorf("stale profiles served +%v, want >= 10", d)
	}
	if d := app.Metric(t, strict, `openaaa_ldap_cache_lookups_total{result="unavailable"}`) - unavailBefore; d < 10 {
		t.Errorf("unavailable lookups +%v, want >= 10", d)
	}
	if v := app.Metric(t, strict, `openaaa_ldap_up`); v != 0 {
		t.Errorf("openaaa_ldap_up = %v during the outage", v)
	}

	srv.Start(t)
	start := time.Now()
	testenv.Eventually(t, 10*time.Second, "auth from LDAP after slapd restart", func() bool {
		reply, err := apptest.Send(strict.Addr("radius.authAddress"), apptest.PAP(ldapSecret, "user00002", "pw00002"), time.Second)
		return err == nil && reply.Code == radius.CodeAccessAccept
	})
	t.Logf("recovered %v after slapd restart", time.Since(start).Round(time.Millisecond))
	reply, err := apptest.Send(stale.Addr("radius.authAddress"), apptest.PAP(ldapSecret, "user00003", "pw00003"), 2*time.Second)
	apptest.Check(t, err)
	if reply.Code != radius.CodeAccessAccept {
		t.Errorf("serveStale node after restart: %v", reply.Code)
	}
}

// subscribers.ldap.lookupTimeout bounds an auth's lookup, not the search timeout: with slapd
// frozen and a 3 s search timeout, an uncached subscriber is rejected after the 400 ms lookup
// bound (it was a hard-coded 2 s).
func TestLDAPLookupTimeoutFromConfig(t *testing.T) {
	srv := testslapd.Start(t, 10)
	n := ldapNode(t, srv, "    timeout: 3s\n    lookupTimeout: 400ms\n    retryInterval: 0s\n    cache: {ttl: 1ms, serveStale: false}\n")
	reply, err := apptest.Send(n.Addr("radius.authAddress"), apptest.PAP(ldapSecret, "user00001", "pw00001"), 2*time.Second)
	apptest.Check(t, err)
	if reply.Code != radius.CodeAccessAccept {
		t.Fatalf("before the freeze: %v", reply.Code)
	}
	srv.Pause(t)
	defer srv.Resume(t)
	start := time.Now()
	reply, err = apptest.Send(n.Addr("radius.authAddress"), apptest.PAP(ldapSecret, "user00002", "pw00002"), 5*time.Second)
	took := time.Since(start)
	apptest.Check(t, err)
	if reply.Code != radius.CodeAccessReject {
		t.Fatalf("slapd frozen: %v, want Access-Reject", reply.Code)
	}
	t.Logf("rejected after %v", took.Round(time.Millisecond))
	if took < 350*time.Millisecond || took > 1500*time.Millisecond {
		t.Errorf("rejected after %v, want about lookupTimeout (400ms)", took)
	}
}
