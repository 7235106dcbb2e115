// Package scrape reads the policing node's Prometheus /metrics page (text format, parsed
// with prometheus/common/expfmt) for the figures of the capacity report: transactions
// (outgoing TPS), busy workers, requests by result and drops by reason.
package scrape

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric names read (see services/policing/internal/metrics).
const (
	Transactions = "openaaa_transactions_total"
	WorkersBusy  = "openaaa_radius_workers_busy"
	Workers      = "openaaa_radius_workers"
	Requests     = "openaaa_radius_requests_total"
	Dropped      = "openaaa_radius_requests_dropped_total"
	Sessions     = "openaaa_sessions_active"
)

// Snapshot is one scrape.
type Snapshot struct {
	At           time.Time
	Transactions float64            // sum over kinds
	WorkersBusy  float64            // gauge
	Workers      float64            // gauge
	Sessions     float64            // gauge: active sessions in the store
	Requests     map[string]float64 // "kind/result" -> count
	Dropped      map[string]float64 // reason -> count
}

// Fetch scrapes url (e.g. http://127.0.0.1:9812/metrics).
func Fetch(ctx context.Context, client *http.Client, url string) (*Snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return Parse(resp.Body)
}

// Parse reads the Prometheus text format.
func Parse(r io.Reader) (*Snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	s := &Snapshot{At: time.Now(), Requests: map[string]float64{}, Dropped: map[string]float64{}}
	for _, m := range fams[Transactions].GetMetric() {
		s.Transactions += value(m)
	}
	for _, m := range fams[WorkersBusy].GetMetric() {
		s.WorkersBusy += value(m)
	}
	for _, m := range fams[Workers].GetMetric() {
		s.Workers += value(m)
	}
	for _, m := range fams[Sessions].GetMetric() {
		s.Sessions += value(m)
	}
	for _, m := range fams[Requests].GetMetric() {
		s.Requests[label(m, "kind")+"/"+label(m, "result")] += value(m)
	}
	for _, m := range fams[Dropped].GetMetric() {
		s.Dropped[label(m, "reason")] += value(m)
	}
	return s, nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Delta returns the per-key increase of counters b - a (keys of either).
func Delta(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range b {
		if d := v - a[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// URL turns "host:port" or a full URL into the /metrics URL.
func URL(s string) string {
	if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		if strings.Count(s, "/") == 2 {
			return s + "/metrics"
		}
		return s
	}
	return "http://" + s + "/metrics"
}
