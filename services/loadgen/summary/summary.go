// Package summary is the compact capacity report aaa-loadgen writes with --summary-file: small
// enough for a container's termination message (Kubernetes keeps at most 4096 bytes of it),
// so that the operator reads an AAALoadTest's result from the pod status, never from its logs.
// aaa-loadgen writes it and the operator reads it: this package is the one definition of the
// format both sides share.
package summary

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// MaxBytes is what Kubernetes keeps of a termination message.
const MaxBytes = 4096

// Version of the format; a reader refuses another.
const Version = 1

// Figures are the field's report for all targets or one: incoming TPS, outgoing TPS, workers
// busy, avg auth ms, avg acct ms, plus p99 and the counts behind them. Latencies are from the
// load generator (request sent to reply received, retransmissions included); OutgoingTPS,
// WorkersBusy and Workers come from policing's /metrics and are absent when not scraped.
type Figures struct {
	IncomingTPS float64  `json:"in"`
	OutgoingTPS *float64 `json:"out,omitempty"`
	WorkersBusy *float64 `json:"busy,omitempty"`
	Workers     *float64 `json:"wk,omitempty"`
	AvgAuthMs   float64  `json:"auth"`
	AvgAcctMs   float64  `json:"acct"`
	P99Ms       float64  `json:"p99"`
	Answered    uint64   `json:"ans"`
	Timeouts    uint64   `json:"to"`
	Errors      uint64   `json:"err"`
	Accepts     uint64   `json:"acc"`
	Rejects     uint64   `json:"rej"`
}

// Target is one target's (one data center's) share of the run.
type Target struct {
	Name string `json:"n"`
	Figures
}

// Summary is one run.
type Summary struct {
	V       int     `json:"v"`
	Seconds float64 `json:"s"`
	Figures
	Sent         uint64 `json:"sent"`
	Sessions     uint64 `json:"ses"`
	SessionsDone uint64 `json:"sesDone"`
	// Dropped: the requests policing dropped during the run, by reason
	// (openaaa_radius_requests_dropped_total of the scraped pods, e.g. unknown_client): why a
	// run went unanswered. Absent without server metrics or when nothing was dropped.
	Dropped map[string]uint64 `json:"drop,omitempty"`
	// Targets in the order of --target; dropped (Truncated) if they would not fit in MaxBytes.
	Targets   []Target `json:"t,omitempty"`
	Truncated bool     `json:"trunc,omitempty"`
	// Error is set instead of the figures when the run could not take place.
	Error string `json:"error,omitempty"`
}

// round3 keeps three decimals: the message stays small and nothing the report shows is lost.
func round3(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Round(v*1000) / 1000
}

func roundp(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := round3(*p)
	return &v
}

func (f Figures) rounded() Figures {
	f.IncomingTPS, f.AvgAuthMs, f.AvgAcctMs, f.P99Ms = round3(f.IncomingTPS), round3(f.AvgAuthMs), round3(f.AvgAcctMs), round3(f.P99Ms)
	f.OutgoingTPS, f.WorkersBusy, f.Workers = roundp(f.OutgoingTPS), roundp(f.WorkersBusy), roundp(f.Workers)
	return f
}

// Marshal encodes s in at most MaxBytes: figures rounded to three decimals; the per-target
// figures dropped (Truncated) and then the error shortened if that is still too long.
func Marshal(s Summary) ([]byte, error) {
	s.V = Version
	s.Seconds = round3(s.Seconds)
	s.Figures = s.Figures.rounded()
	ts := make([]Target, len(s.Targets))
	for i, t := range s.Targets {
		ts[i] = Target{Name: t.Name, Figures: t.Figures.rounded()}
	}
	s.Targets = ts
	b, err := json.Marshal(s)
	if err != nil || len(b) <= MaxBytes {
		return b, err
	}
	s.Targets, s.Truncated = nil, true
	if b, err = json.Marshal(s); err != nil || len(b) <= MaxBytes {
		return b, err
	}
	// Only a long error can get here: keep its beginning.
	over := len(b) - MaxBytes + 3
	if over >= len(s.Error) {
		return nil, fmt.Errorf("summary: %d bytes, more than %d", len(b), MaxBytes)
	}
	s.Error = s.Error[:len(s.Error)-over] + "..."
	b, err = json.Marshal(s)
	for err == nil && len(b) > MaxBytes && s.Error != "" { // escaping made it longer
		s.Error = s.Error[:len(s.Error)/2]
		b, err = json.Marshal(s)
	}
	return b, err
}

// Write writes Marshal(s) to w.
func Write(w io.Writer, s Summary) error {
	b, err := Marshal(s)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Parse decodes a summary written by Marshal.
func Parse(b []byte) (*Summary, error) {
	if len(b) == 0 {
		return nil, errors.New("summary: empty")
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	if s.V != Version {
		return nil, fmt.Errorf("summary: version %d, want %d", s.V, Version)
	}
	return &s, nil
}
