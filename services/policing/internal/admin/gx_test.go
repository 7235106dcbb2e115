package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
	"github.com/openaaa/openaaa/services/policing/internal/session"
)

const gxTestToken = "gx-test-token-0123456789abcdef"

// heldBy is the error a node's RAR returns when another node holds the PCEF's connection
// (gx.HeldElsewhere, whose end-to-end test is test/e2e's multi-DC run).
type heldBy string

func (h heldBy) Error() string  { return "held by " + string(h) }
func (h heldBy) Holder() string { return string(h) }

// testMetrics are the metrics of the admin servers these tests build, on a registry of their
// own: tests read their differences.
var testMetrics = NewMetrics(metrics.With(prometheus.NewRegistry()))

func node(t *testing.T, name string, rar GxRAR, nodes map[string]string) *httptest.Server {
	t.Helper()
	tok := &Token{}
	tok.Set([]byte(gxTestToken))
	s := &Server{Store: nil, Log: slog.New(slog.DiscardHandler), Token: tok, GxRAR: rar, NodeName: name, Metrics: testMetrics,
		GxNodes: func(_ context.Context, host string) (string, error) {
			if u, ok := nodes[host]; ok {
				return u, nil
			}
			return "", session.ErrNotFound
		}}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func postRAR(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(GxRARRequest{SessionID: "pgw;1;1", Install: []string{"video"}})
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/gx/rar", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+gxTestToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// A RAR asked of a node that does not hold the PCEF's connection is forwarded to the node
// that does, with the caller's credential, and its answer relayed.
func TestRARForwardedToTheHolder(t *testing.T) {
	var got []string
	nodes := map[string]string{}
	holder := node(t, "pcrf.dc1", func(_ context.Context, sid string, install, _ []string) (uint32, error) {
		got = append(got, fmt.Sprintf("%s %v", sid, install))
		return 2001, nil
	}, nodes)
	nodes["pcrf.dc1"] = holder.URL
	other := node(t, "pcrf.dc3", func(context.Context, string, []string, []string) (uint32, error) {
		return 0, heldBy("pcrf.dc1")
	}, nodes)
	before := testutil.ToFloat64(testMetrics.rarsForwarded.WithLabelValues("ok"))
	code, out := postRAR(t, other.URL)
	if code != http.StatusOK || out["resultCode"] != float64(2001) || len(got) != 1 || got[0] != "pgw;1;1 [video]" {
		t.Fatalf("HTTP %d %v; the holder saw %v", code, out, got)
	}
	if testutil.ToFloat64(testMetrics.rarsForwarded.WithLabelValues("ok")) != before+1 {
		t.Fatal("forward not counted")
	}
}

// Two nodes that each think the other holds the connection do not loop: one forward only.
func TestRARForwardedOnce(t *testing.T) {
	nodes := map[string]string{}
	held := func(h string) GxRAR {
		return func(context.Context, string, []string, []string) (uint32, error) { return 0, heldBy(h) }
	}
	a := node(t, "a", held("b"), nodes)
	b := node(t, "b", held("a"), nodes)
	nodes["a"], nodes["b"] = a.URL, b.URL
	if code, out := postRAR(t, a.URL); code != http.StatusConflict {
		t.Fatalf("HTTP %d %v, want 409", code, out)
	}
}

// A holder that is not registered (it stopped) is a 409 naming it.
func TestRARHolderUnregistered(t *testing.T) {
	a := node(t, "a", func(context.Context, string, []string, []string) (uint32, error) { return 0, heldBy("gone") }, nil)
	code, out := postRAR(t, a.URL)
	if msg, _ := out["error"].(string); code != http.StatusConflict || !bytes.Contains([]byte(msg), []byte("gone")) {
		t.Fatalf("HTTP %d %v, want 409 naming the node", code, out)
	}
}
