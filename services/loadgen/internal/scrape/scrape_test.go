package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const sample = `# HELP openaaa_transactions_total Transactions.
# TYPE openaaa_transactions_total counter
openaaa_transactions_total{kind="radius_auth"} 100
openaaa_transactions_total{kind="radius_acct"} 700
openaaa_transactions_total{kind="proxy"} 700
# TYPE openaaa_radius_workers_busy gauge
openaaa_radius_workers_busy 3
# TYPE openaaa_radius_workers gauge
openaaa_radius_workers 64
# TYPE openaaa_radius_requests_total counter
openaaa_radius_requests_total{kind="auth",result="accept"} 90
openaaa_radius_requests_total{kind="auth",result="reject"} 10
# TYPE openaaa_radius_requests_dropped_total counter
openaaa_radius_requests_dropped_total{reason="overload"} 42
openaaa_radius_requests_dropped_total{reason="duplicate"} 1
# TYPE openaaa_sessions_active gauge
openaaa_sessions_active 77
# TYPE go_goroutines gauge
go_goroutines 12
`

func TestParse(t *testing.T) {
	s, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if s.Transactions != 1500 || s.WorkersBusy != 3 || s.Workers != 64 || s.Sessions != 77 {
		t.Errorf("%+v", s)
	}
	if s.Requests["auth/accept"] != 90 || s.Dropped["overload"] != 42 {
		t.Errorf("requests %v dropped %v", s.Requests, s.Dropped)
	}
	d := Delta(map[string]float64{"overload": 40, "duplicate": 1}, s.Dropped)
	if len(d) != 1 || d["overload"] != 2 {
		t.Errorf("delta %v", d)
	}
}

func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(sample))
	}))
	defer srv.Close()
	s, err := Fetch(context.Background(), srv.Client(), URL(strings.TrimPrefix(srv.URL, "http://")))
	if err != nil || s.Transactions != 1500 {
		t.Fatalf("%v %v", s, err)
	}
	if URL("http://h:1") != "http://h:1/metrics" || URL("http://h:1/x") != "http://h:1/x" {
		t.Error("URL")
	}
}
