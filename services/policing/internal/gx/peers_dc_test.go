package gx

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/policing/internal/admin"
	"github.com/openaaa/openaaa/services/policing/internal/dict"
	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/policy"
	"github.com/openaaa/openaaa/services/policing/internal/policy/luapolicy"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

const luaQuotaYAML = `
profiles:
  lua:
    quotaOctets: 1000
    dataPolicy: {rules: [internet], monitoringKey: mk1}
subscribers:
  - {username: "001010000000001", password: x, profileName: lua}
`

const dcTestToken = "gx-dc-test-token-0123456789abcdef"

// adminOf serves a node's admin API: its RARs, and the other nodes' URLs by name (the
// store's node registry in production).
func adminOf(t *testing.T, st session.Store, h *Handler, nodes map[string]string) *httptest.Server {
	t.Helper()
	tok := &admin.Token{}
	tok.Set([]byte(dcTestToken))
	srv := httptest.NewServer((&admin.Server{Store: st, Log: slog.New(slog.DiscardHandler), Token: tok, Metrics: admin.NewMetrics(metrics.Factory{}),
		GxRAR: h.RAR, NodeName: h.node(),
		GxNodes: func(_ context.Context, node string) (string, error) {
			if u, ok := nodes[node]; ok {
				return u, nil
			}
			return "", session.ErrNotFound
		}}).Handler())
	t.Cleanup(srv.Close)
	nodes[h.node()] = srv.URL
	return srv
}

// The whole story with a PCEF no one here wrote (python-diameter): it gets its rules,
// reports usage, is throttled by a Lua rule (testdata/throttle.lua: the quota's percentage
// reaches 100), and receives a RAR asked of another data center — two Gx nodes on one store,
// the RAR posted to the node the PCEF is not connected to, forwarded through the admin API to
// the node holding its connection.
func TestPythonDiameterPCEFLuaThrottleAndRARFromAnotherDC(t *testing.T) {
	pcef := pythonPCEF(t)
	eng, err := luapolicy.New(luapolicy.Options{File: filepath.Join("testdata", "throttle.lua"), Budget: 50 * time.Millisecond,
		PoolSize: 2, Memoize: true, MemoSize: 100, Dict: dict.Builtin, Builtin: &policy.Default{Dict: dict.Builtin},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	path := filepath.Join(t.TempDir(), "subscribers.yaml")
	if err := os.WriteFile(path, []byte(luaQuotaYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	st, dc1, h1, src := newServerOnFile(t, eng, path, "pgw.py.test")
	_, h3 := serveOn(t, st, src, eng, "pcrf.dc3", "pgw.py.test")
	nodes := map[string]string{}
	adminOf(t, st, h1, nodes)
	dc3 := adminOf(t, st, h3, nodes)

	var rarStatus int
	var rar struct {
		ResultCode uint32 `json:"resultCode"`
	}
	pushRAR := func() { // once the session is stored, ask dc3 for a RAR
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if ss, err := st.ByUser(context.Background(), "001010000000001"); err == nil && len(ss) == 1 {
				body, _ := json.Marshal(admin.GxRARRequest{SessionID: ss[0].ID, Install: []string{"boost"}})
				req, _ := http.NewRequest(http.MethodPost, dc3.URL+"/api/v1/gx/rar", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+dcTestToken)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				rarStatus = resp.StatusCode
				_ = json.NewDecoder(resp.Body).Decode(&rar)
				resp.Body.Close()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	r := runPCEF(t, pcef, strconv.Itoa(dc1.(*net.TCPAddr).Port), "pgw.py.test", pushRAR)
	if !r.Ready || len(r.Answers) != 4 {
		t.Fatalf("PCEF result %+v", r)
	}
	if rarStatus != http.StatusOK || rar.ResultCode != 2001 || !r.RARReceived || !slices.Equal(r.RARInstalled, []string{"boost"}) {
		t.Fatalf("RAR asked of dc3: HTTP %d, RAA %d; the PCEF on dc1 received it: %v, installing %v", rarStatus, rar.ResultCode, r.RARReceived, r.RARInstalled)
	}
	i, u1, u2 := r.Answers[0], r.Answers[1], r.Answers[2]
	if !slices.Equal(i.Installed, []string{"internet"}) || len(u1.Installed)+len(u1.Removed) != 0 {
		t.Fatalf("CCA-I installed %v; CCA-U at 600 of 1000: +%v -%v", i.Installed, u1.Installed, u1.Removed)
	}
	if !slices.Equal(u2.Installed, []string{"lua-throttle-1m"}) || !slices.Equal(u2.Removed, []string{"internet"}) {
		t.Fatalf("CCA-U at 1000 of 1000: +%v -%v; want the Lua rule's throttle", u2.Installed, u2.Removed)
	}
	for n, a := range r.Answers {
		if a.ResultCode != 2001 {
			t.Fatalf("answer %d: Result-Code %d", n, a.ResultCode)
		}
	}
}
