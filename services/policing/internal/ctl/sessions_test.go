package ctl

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// policing ctl sessions / session against a fake admin API: the query, the bearer token from
// the file, the JSON printed, and the exit codes (0 found, 3 none, 2 usage or auth).
func TestCtlSessions(t *testing.T) {
	const token = "0123456789abcdef0123"
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		paths = append(paths, r.URL.RequestURI())
		switch {
		case r.URL.Path == "/api/v1/sessions" && r.URL.Query().Get("user") == "alice":
			_, _ = w.Write([]byte(`{"sessions":[{"nas":"198.18.0.2","acctSessionId":"s1","userName":"alice"}]}`))
		case r.URL.Path == "/api/v1/sessions":
			_, _ = w.Write([]byte(`{"sessions":[]}`))
		case r.URL.Path == "/api/v1/sessions/198.18.0.2/s1":
			_, _ = w.Write([]byte(`{"nas":"198.18.0.2","acctSessionId":"s1","userName":"alice"}`))
		default:
			http.Error(w, `{"error":"no such active session"}`, http.StatusNotFound)
		}
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(context.Background(), append(args, "--admin", srv.URL, "--token-file", tokenFile), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, _ := run("sessions", "--user", "alice"); code != 0 || !strings.Contains(out, `"acctSessionId":"s1"`) {
		t.Errorf("sessions --user alice: %d %s", code, out)
	}
	if code, _, _ := run("sessions", "--calling-station", "4915112345678", "--called-station", "internet"); code != 3 {
		t.Errorf("sessions with none: exit %d, want 3", code)
	}
	if code, _, errb := run("sessions", "--user", "a", "--ip", "10.0.0.1"); code != 2 || !strings.Contains(errb, "exactly one") {
		t.Errorf("two selectors: %d %s", code, errb)
	}
	if code, out, _ := run("session", "198.18.0.2/s1"); code != 0 || !strings.Contains(out, `"userName":"alice"`) {
		t.Errorf("session: %d %s", code, out)
	}
	if code, _, _ := run("session", "198.18.0.2/gone"); code != 3 {
		t.Errorf("no such session: exit %d, want 3", code)
	}
	if code, _, _ := run("session", "no-slash"); code != 2 {
		t.Errorf("bad key: exit %d, want 2", code)
	}
	want := []string{"/api/v1/sessions?user=alice", "/api/v1/sessions?calledStationId=internet&callingStationId=4915112345678",
		"/api/v1/sessions/198.18.0.2/s1", "/api/v1/sessions/198.18.0.2/gone"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("requests %v, want %v", paths, want)
	}
	// Without the token: 2, and it says what is missing.
	var out, errb bytes.Buffer
	t.Setenv("POLICING_ADMIN_TOKEN", "")
	if code := Main(context.Background(), []string{"sessions", "--user", "alice", "--admin", srv.URL, "--token-file", filepath.Join(t.TempDir(), "none")}, &out, &errb); code != 2 {
		t.Errorf("missing token file: exit %d (%s)", code, errb.String())
	}
}
