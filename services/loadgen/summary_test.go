package main

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openaaa/openaaa/services/loadgen/internal/population"
	"github.com/openaaa/openaaa/services/loadgen/internal/responder"
	"github.com/openaaa/openaaa/services/loadgen/summary"
)

// startResponder starts a RADIUS responder (secret testing123) that knows the first users of
// the default population; it stops with the test.
func startResponder(t *testing.T, users int) *responder.Responder {
	t.Helper()
	pop, _ := population.Pattern(users, "user%05d", "pass%05d", "10.0.0.1")
	srv := &responder.Responder{Secret: []byte("testing123"), Passwords: map[string]string{}}
	for _, u := range pop.Users {
		srv.Passwords[u.Name] = u.Password
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// fakeMetrics serves a policing-like /metrics page for one DC: transactions are twice the
// requests its responder has seen (as with an accounting proxy), busy workers a constant.
func fakeMetrics(t *testing.T, srv *responder.Responder, busy float64) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE openaaa_transactions_total counter\nopenaaa_transactions_total{kind=\"radius\"} %d\n", 2*len(srv.Requests()))
		fmt.Fprintf(w, "# TYPE openaaa_radius_workers_busy gauge\nopenaaa_radius_workers_busy %g\n", busy)
		fmt.Fprintf(w, "# TYPE openaaa_radius_workers gauge\nopenaaa_radius_workers 64\n")
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestSummaryFile: --summary-file writes the compact report, per target and in total, with the
// servers' figures of each target taken from that target's --metrics.
func TestSummaryFile(t *testing.T) {
	srvs := []*responder.Responder{startResponder(t, 50), startResponder(t, 50)}
	file := filepath.Join(t.TempDir(), "termination-log")
	_, stderr, code := lg(t, "run", "--target", "dc1="+srvs[0].Target(), "--target", "dc2="+srvs[1].Target(),
		"--metrics", "dc1="+fakeMetrics(t, srvs[0], 3), "--metrics", "dc2="+fakeMetrics(t, srvs[1], 5),
		"--users", "50", "--concurrency", "2", "--duration", "1200ms", "--summary-file", file, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > summary.MaxBytes {
		t.Errorf("summary of %d bytes", len(raw))
	}
	s, err := summary.Parse(raw)
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if len(s.Targets) != 2 || s.Targets[0].Name != "dc1" || s.Targets[1].Name != "dc2" {
		t.Fatalf("targets %+v", s.Targets)
	}
	var answered uint64
	for i, tg := range s.Targets {
		// The requests in flight when the run ended (at most one per worker) were answered
		// but not counted.
		seen := uint64(len(srvs[i].Requests()))
		if tg.Answered > seen || seen-tg.Answered > 2 || tg.Answered == 0 || tg.Timeouts != 0 {
			t.Errorf("%s: answered %d timeouts %d, its responder answered %d", tg.Name, tg.Answered, tg.Timeouts, seen)
		}
		if want := float64(tg.Answered) / s.Seconds; math.Abs(tg.IncomingTPS-want) > 0.01*want+0.01 {
			t.Errorf("%s: incoming TPS %v, want %v", tg.Name, tg.IncomingTPS, want)
		}
		// Outgoing = 2 × incoming here, but the scrapes bracket the run a little more widely.
		if tg.OutgoingTPS == nil || *tg.OutgoingTPS < 1.9*tg.IncomingTPS || *tg.OutgoingTPS > 2.2*tg.IncomingTPS {
			t.Errorf("%s: outgoing TPS %v, incoming %v", tg.Name, tg.OutgoingTPS, tg.IncomingTPS)
		}
		if want := []float64{3, 5}[i]; tg.WorkersBusy == nil || *tg.WorkersBusy != want || tg.Workers == nil || *tg.Workers != 64 {
			t.Errorf("%s: workers busy %v of %v, want %v of 64", tg.Name, tg.WorkersBusy, tg.Workers, want)
		}
		if tg.AvgAuthMs <= 0 || tg.AvgAcctMs <= 0 || tg.P99Ms < tg.AvgAuthMs {
			t.Errorf("%s: auth %v acct %v p99 %v", tg.Name, tg.AvgAuthMs, tg.AvgAcctMs, tg.P99Ms)
		}
		answered += tg.Answered
	}
	if s.Answered != answered || s.WorkersBusy == nil || *s.WorkersBusy != 8 || s.Workers == nil || *s.Workers != 128 {
		t.Errorf("total: answered %d (targets %d), busy %v of %v", s.Answered, answered, s.WorkersBusy, s.Workers)
	}
	if s.Accepts == 0 || s.Sessions == 0 || s.Error != "" {
		t.Errorf("total: %+v", s)
	}
}

// TestSummaryFileError: a run that cannot start leaves its error in the summary file.
func TestSummaryFileError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "termination-log")
	_, _, code := lg(t, "run", "--target", "dc1=127.0.0.1:1812", "--metrics", "dc9=127.0.0.1:9812", "--summary-file", file, "--quiet")
	if code == 0 {
		t.Fatal("an unknown --metrics target was accepted")
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := summary.Parse(raw)
	if err != nil || !strings.Contains(s.Error, `no --target named "dc9"`) {
		t.Errorf("summary %s: %v", raw, err)
	}
}

// TestMetricsBestEffort: an unreadable /metrics page fails the run, unless
// --metrics-best-effort leaves it out (the other pages still count).
func TestMetricsBestEffort(t *testing.T) {
	srv := startResponder(t, 10)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	for _, bestEffort := range []bool{false, true} {
		file := filepath.Join(t.TempDir(), "summary")
		args := []string{"run", "--target", "dc1=" + srv.Target(), "--metrics", "dc1=" + fakeMetrics(t, srv, 2), "--metrics", "dc1=" + deadURL,
			"--users", "10", "--sessions", "5", "--summary-file", file, "--quiet"}
		if bestEffort {
			args = append(args, "--metrics-best-effort")
		}
		_, stderr, code := lg(t, args...)
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := summary.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !bestEffort && (code == 0 || !strings.Contains(s.Error, "metrics before the run")):
			t.Errorf("strict: exit %d, summary %s", code, raw)
		case bestEffort && (code != 0 || s.Error != "" || s.OutgoingTPS == nil || len(s.Targets) != 1 || s.Targets[0].OutgoingTPS == nil || !strings.Contains(stderr, "leaving out")):
			t.Errorf("best effort: exit %d, summary %s, stderr %s", code, raw, stderr)
		}
	}
}
