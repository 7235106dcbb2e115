package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openaaa/openaaa/internal/testenv"
	"github.com/openaaa/openaaa/services/policing/internal/apptest"
)

// TestShutdownDeliversProxyQueue: requests acknowledged to the NAS wait in the proxy queue while
// every upstream is down; the node is told to stop (SIGTERM) and an upstream comes back during
// the grace period. The queue reaches that upstream before the node exits: on Kubernetes the
// queue's directory dies with the pod, so what is left at exit is lost.
func TestShutdownDeliversProxyQueue(t *testing.T) {
	up1 := newFreeRADIUS(t, "dq1", "--role", "acct", "--secret", radclientSecret)
	up2 := newFreeRADIUS(t, "dq2", "--role", "acct", "--secret", radclientSecret)
	n, _ := proxyNode(t, "queue", "failover", up1, up2)
	up1.stop()
	up2.stop()
	for i := range 4 {
		out := apptest.Radclient(t, n.Addr("radius.acctAddress").String(), "acct", radclientSecret, 1, 2,
			acctLinesFor("Interim-Update", "DQ-1", "bob", fmt.Sprintf("Acct-Session-Time = %d", 10*(i+1)))...)
		if !strings.Contains(out, "Received Accounting-Response") {
			t.Fatalf("no local Accounting-Response:\n%s", out)
		}
	}
	testenv.Eventually(t, 20*time.Second, "4 requests queued", func() bool { return n.Proxy.Pending() == 4 })

	delivered := testutil.ToFloat64(n.d.m.drainDelivered.WithLabelValues("proxy"))
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		done <- n.Shutdown(ctx)
	}()
	// Draining: not ready, so no new traffic is routed here, and the admin port still answers.
	testenv.Eventually(t, 10*time.Second, "/readyz 503 while draining", func() bool {
		resp, err := http.Get("http://" + n.Addr("admin.address").String() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	if v := Metric(t, n, `openaaa_node_draining`); v != 1 {
		t.Errorf("openaaa_node_draining = %v while draining, want 1", v)
	}
	if v := Metric(t, n, `openaaa_proxy_queue_records`); v != 4 {
		t.Errorf("openaaa_proxy_queue_records = %v while draining, want 4", v)
	}
	up2.start()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Shutdown did not return")
	}
	if d := testutil.ToFloat64(n.d.m.drainDelivered.WithLabelValues("proxy")) - delivered; d != 4 {
		t.Errorf("openaaa_drain_delivered_total{queue=proxy} rose by %v, want 4", d)
	}
	got := recordsFor(up2, "DQ-1")
	if len(got) != 4 {
		t.Fatalf("the second upstream got %d of the 4 queued requests at shutdown", len(got))
	}
	for i, r := range got {
		if !strings.Contains(r, fmt.Sprintf("Acct-Session-Time = %d", 10*(i+1))) {
			t.Errorf("queued record %d out of order:\n%s", i, r)
		}
	}
}

// TestShutdownCountsWhatIsLeft: no upstream comes back within the shutdown time. The node
// says so — an error (the process exits 1), the left counter — and the queue stays on disk.
func TestShutdownCountsWhatIsLeft(t *testing.T) {
	up := newFreeRADIUS(t, "dl1", "--role", "acct", "--secret", radclientSecret)
	n, _ := proxyNode(t, "queue", "failover", up)
	up.stop()
	for i := range 2 {
		out := apptest.Radclient(t, n.Addr("radius.acctAddress").String(), "acct", radclientSecret, 1, 2, acctLinesFor("Start", fmt.Sprintf("DL-%d", i), "bob")...)
		if !strings.Contains(out, "Received Accounting-Response") {
			t.Fatalf("no local Accounting-Response:\n%s", out)
		}
	}
	testenv.Eventually(t, 20*time.Second, "2 requests queued", func() bool { return n.Proxy.Pending() == 2 })
	left := testutil.ToFloat64(n.d.m.drainLeft.WithLabelValues("proxy"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := n.Shutdown(ctx)
	if err == nil || !strings.Contains(err.Error(), "2 acknowledged accounting records left undelivered") {
		t.Fatalf("Shutdown = %v, want the 2 records left named", err)
	}
	if d := testutil.ToFloat64(n.d.m.drainLeft.WithLabelValues("proxy")) - left; d != 2 {
		t.Errorf("openaaa_drain_left_total{queue=proxy} rose by %v, want 2", d)
	}
	if p := n.Proxy.Pending(); p != 2 {
		t.Errorf("queue holds %d records after the shutdown, want the 2 left on disk", p)
	}
}
