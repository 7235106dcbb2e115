package app

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
	"github.com/openaaa/openaaa/services/policing/internal/session"
	"github.com/openaaa/openaaa/services/policing/internal/store/embedded"
)

// A Diameter and an EAP record under one name are one record with both; under two names,
// two; nothing to register is none.
func TestMergeNodes(t *testing.T) {
	gx := &session.Node{Name: "pod-0", Host: "pcrf", AdminURL: "http://10.0.0.1:9090"}
	ep := &session.Node{Name: "pod-0", EAPForward: "10.0.0.1:1815"}
	got := mergeNodes(gx, ep)
	if len(got) != 1 || got[0].Host != "pcrf" || got[0].AdminURL != gx.AdminURL || got[0].EAPForward != ep.EAPForward {
		t.Fatalf("one name: %+v", got)
	}
	other := &session.Node{Name: "pod-0:3868", Host: "pcrf", AdminURL: gx.AdminURL}
	if got := mergeNodes(other, ep); len(got) != 2 || got[0].EAPForward != "" || got[1].AdminURL != "" {
		t.Fatalf("two names: %+v", got)
	}
	if got := mergeNodes(nil, nil); len(got) != 0 {
		t.Fatalf("nothing: %+v", got)
	}
	if got := mergeNodes(nil, ep); len(got) != 1 || got[0] != *ep {
		t.Fatalf("EAP only: %+v", got)
	}
}

// flakyRegistry is the embedded store's registry, failing while down.
type flakyRegistry struct {
	*embedded.Store
	down atomic.Bool
}

func (f *flakyRegistry) RegisterNode(ctx context.Context, n session.Node, ttl time.Duration) error {
	if f.down.Load() {
		return errors.New("store unavailable")
	}
	return f.Store.RegisterNode(ctx, n, ttl)
}

// Registration failures are counted every time, logged once per outage (warn) with its end
// (info), and the refresh recovers by itself.
func TestNodeRegistryRefreshRecovers(t *testing.T) {
	t.Parallel() // its metrics are its own
	st, err := embedded.Open(embedded.Options{})
	apptest.Check(t, err)
	defer st.Close(context.Background())
	reg := &flakyRegistry{Store: st}
	reg.down.Store(true)
	var logs testenv.LogBuffer // the refresh goroutine logs, the test reads
	failures := newNodeMetrics(prometheus.NewRegistry()).registryFailures
	stop := refreshNodes(reg, []session.Node{{Name: "node-a", EAPForward: "10.0.0.1:1815"}}, 10*time.Millisecond, slog.New(slog.NewTextHandler(&logs, nil)), failures)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	testenv.Eventually(t, 5*time.Second, "several failed refreshes", func() bool { return testutil.ToFloat64(failures) >= 3 })
	if _, err := st.LookupNode(context.Background(), "node-a"); err == nil {
		t.Fatal("registered while the store is down")
	}
	reg.down.Store(false)
	testenv.Eventually(t, 5*time.Second, "the record written", func() bool {
		n, err := st.LookupNode(context.Background(), "node-a")
		return err == nil && n.EAPForward == "10.0.0.1:1815"
	})
	stop()
	stop = nil
	out := logs.String()
	if strings.Count(out, "level=WARN") != 1 || strings.Count(out, "in the node registry again") != 1 || !strings.Contains(out, "store unavailable") {
		t.Fatalf("want one warning and one recovery:\n%s", out)
	}
}
