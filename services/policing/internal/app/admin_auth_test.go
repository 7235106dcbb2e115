package app

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"layeh.com/radius/rfc2866"

	"github.com/openaaa/openaaa/services/policing/internal/apptest"
	"github.com/openaaa/openaaa/services/policing/internal/ctl"
)

// adminCall sends one admin request with token as the bearer token ("" sends none).
func adminCall(t *testing.T, n *Node, method, path, token string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+n.Addr("admin.address").String()+path, strings.NewReader(body))
	apptest.Check(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	apptest.Check(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The admin API serves state only to a caller holding the token; metrics and probes stay
// open to scrapers and the kubelet.
func TestAdminAPIRequiresToken(t *testing.T) {
	n := startNode(t)
	startAliceSession(t, n, "sess-auth")

	stateful := []struct{ method, path, body string }{
		{"GET", "/api/v1/sessions?user=alice", ""},
		{"GET", "/api/v1/sessions?framedIp=10.1.0.1", ""},
		{"GET", "/api/v1/sessions/127.0.0.1/sess-auth", ""},
		{"GET", "/api/v1/history?user=alice", ""},
		{"GET", "/api/v1/loglevel", ""},
		{"PUT", "/api/v1/loglevel", `{"level":"error"}`},
		{"POST", "/api/v1/disconnect?user=alice", ""},
		{"POST", "/api/v1/coa?user=alice", `{"attributes":{"Session-Timeout":"1"}}`},
	}
	for _, tok := range []string{"", "wrong-token-of-the-same-kind-000", adminToken + "x", adminToken[:20]} {
		for _, c := range stateful {
			code, body := adminCall(t, n, c.method, c.path, tok, c.body)
			if code != http.StatusUnauthorized {
				t.Errorf("%s %s with token %q: HTTP %d, want 401\n%s", c.method, c.path, tok, code, body)
			}
			for _, leak := range []string{"alice", "10.1.0.1", "sess-auth", "level\":"} {
				if strings.Contains(body, leak) {
					t.Errorf("%s %s with token %q: the body shows %q:\n%s", c.method, c.path, tok, leak, body)
				}
			}
		}
	}
	if n.LogLevel.Level().String() != "DEBUG" {
		t.Errorf("an unauthenticated PUT changed the log level to %v", n.LogLevel.Level())
	}
	code, body := adminCall(t, n, "GET", "/api/v1/sessions?user=alice", adminToken, "")
	if code != http.StatusOK || !strings.Contains(body, "sess-auth") {
		t.Fatalf("with the token: HTTP %d, want 200 and the session\n%s", code, body)
	}
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		if code, body := adminCall(t, n, "GET", p, "", ""); code != http.StatusOK {
			t.Errorf("GET %s without a token: HTTP %d, want 200\n%s", p, code, body)
		}
	}
	if v := Metric(t, n, "openaaa_admin_unauthorized_requests_total"); v < float64(4*len(stateful)) {
		t.Errorf("openaaa_admin_unauthorized_requests_total = %v, want >= %d", v, 4*len(stateful))
	}
}

// A rotated token file takes effect without a restart: the new token works, the old one no
// longer does. A file that is emptied keeps the token in force.
func TestAdminTokenRotation(t *testing.T) {
	n := startNode(t)
	path := n.Config.Admin.TokenFile
	const rotated = "rotated-admin-token-abcdefghijkl"
	// Replace the file as the kubelet does: write beside, rename over.
	tmp := filepath.Join(filepath.Dir(path), ".token.tmp")
	apptest.Check(t, os.WriteFile(tmp, []byte(rotated+"\n"), 0o600))
	apptest.Check(t, os.Rename(tmp, path))
	if ok, rejected := n.Reloader.Poll(); ok < 1 || rejected != 0 {
		t.Fatalf("poll after the rotation: ok %d rejected %d", ok, rejected)
	}
	if code, _ := adminCall(t, n, "GET", "/api/v1/loglevel", rotated, ""); code != http.StatusOK {
		t.Errorf("the new token: HTTP %d, want 200", code)
	}
	if code, _ := adminCall(t, n, "GET", "/api/v1/loglevel", adminToken, ""); code != http.StatusUnauthorized {
		t.Errorf("the old token: HTTP %d, want 401", code)
	}
	apptest.Check(t, os.WriteFile(path, []byte("short\n"), 0o600))
	if _, rejected := n.Reloader.Poll(); rejected != 1 {
		t.Fatalf("a too short token was not rejected")
	}
	if code, _ := adminCall(t, n, "GET", "/api/v1/loglevel", rotated, ""); code != http.StatusOK {
		t.Errorf("after a rejected reload the token in force: HTTP %d, want 200", code)
	}
}

// Secure by default: a node given no token serves metrics and probes, and no state.
func TestAdminAPIWithoutTokenServesNothing(t *testing.T) {
	n := startNode(t, "admin.tokenFile=")
	start := acct(rfc2866.AcctStatusType_Value_Start, "sess-open", "alice")
	_, err := exchange(t, n.Addr("radius.acctAddress"), start, true)
	apptest.Check(t, err)
	for _, tok := range []string{"", adminToken} {
		code, body := adminCall(t, n, "GET", "/api/v1/sessions?user=alice", tok, "")
		if code != http.StatusForbidden || strings.Contains(body, "sess-open") || !strings.Contains(body, "admin.tokenFile") {
			t.Errorf("token %q: HTTP %d, want 403 naming admin.tokenFile and no session\n%s", tok, code, body)
		}
	}
	if code, _ := adminCall(t, n, "GET", "/metrics", "", ""); code != http.StatusOK {
		t.Errorf("/metrics: HTTP %d, want 200", code)
	}
}

// A token file that is set but unusable stops the start, naming the key and not the content.
func TestAdminTokenFileBadStopsStart(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "token")
	apptest.Check(t, os.WriteFile(bad, []byte("tiny-secret\n"), 0o600))
	cfg := startNodeConfig(t, "admin.tokenFile="+bad)
	_, err := Start(context.Background(), cfg, quietLog(), new(slog.LevelVar))
	if err == nil || !strings.Contains(err.Error(), "admin.tokenFile") || strings.Contains(err.Error(), "tiny-secret") {
		t.Fatalf("start with a too short token: %v; want an error naming admin.tokenFile, without the token", err)
	}
}

// policing ctl sends the token from --token-file, $POLICING_ADMIN_TOKEN_FILE or
// $POLICING_ADMIN_TOKEN; without one it gets 401 and says so.
func TestCtlUsesToken(t *testing.T) {
	n := startNode(t)
	url := "http://" + n.Addr("admin.address").String()
	run := func(env map[string]string, args ...string) (int, string) {
		for k, v := range env {
			t.Setenv(k, v)
		}
		var out, errb bytes.Buffer
		rc := ctl.Main(context.Background(), append([]string{"disconnect", "--user", "nobody", "--admin", url}, args...), &out, &errb)
		return rc, out.String() + errb.String()
	}
	none := map[string]string{"POLICING_ADMIN_TOKEN_FILE": "", "POLICING_ADMIN_TOKEN": ""}
	// 3: the request passed the check and found no session.
	if rc, out := run(none, "--token-file", n.Config.Admin.TokenFile); rc != 3 {
		t.Errorf("--token-file: rc %d, want 3\n%s", rc, out)
	}
	if rc, out := run(map[string]string{"POLICING_ADMIN_TOKEN_FILE": n.Config.Admin.TokenFile}); rc != 3 {
		t.Errorf("POLICING_ADMIN_TOKEN_FILE: rc %d, want 3\n%s", rc, out)
	}
	if rc, out := run(map[string]string{"POLICING_ADMIN_TOKEN_FILE": "", "POLICING_ADMIN_TOKEN": adminToken}); rc != 3 {
		t.Errorf("POLICING_ADMIN_TOKEN: rc %d, want 3\n%s", rc, out)
	}
	if rc, out := run(none, "--token-file", filepath.Join(t.TempDir(), "absent")); rc != 2 || !strings.Contains(out, "token") {
		t.Errorf("an absent token file: rc %d, want 2 and why\n%s", rc, out)
	}
	if rc, out := run(map[string]string{"POLICING_ADMIN_TOKEN_FILE": "", "POLICING_ADMIN_TOKEN": "wrong-token-0123456789"}); rc != 2 || !strings.Contains(out, "401") {
		t.Errorf("a wrong token: rc %d, want 2 and the 401\n%s", rc, out)
	}
}
