package controllers

// A capacity test fails when what it measured is not a capacity: nothing answered, mostly
// timeouts, errors, rejects. The run's summary is checked against spec.successCriteria; the
// reason names the first criterion missed and the message the figures and policing's drops.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/services/loadgen/summary"
)

// Reasons of a run whose figures missed its success criteria (Failed).
const (
	ReasonNothingSent          = "NothingSent"
	ReasonNoAnswer             = "NoAnswer"
	ReasonAnsweredBelowMinimum = "AnsweredBelowMinimum"
	ReasonTimeoutsAboveMaximum = "TimeoutsAboveMaximum"
	ReasonErrorsAboveMaximum   = "ErrorsAboveMaximum"
	ReasonRejectsAboveMaximum  = "RejectsAboveMaximum"
)

// Defaults of spec.successCriteria (also the CRD's defaults).
const (
	defaultMinAnsweredRatio = "0.99"
	defaultMaxTimeoutRatio  = "0.01"
	defaultMaxRejectRatio   = "0.01"
)

// successCriteriaDefaults fills what the API server's defaulting would (an object made before
// the field existed, or a client-side test). Pure.
func successCriteriaDefaults(c aaav1.LoadTestSuccessCriteria) aaav1.LoadTestSuccessCriteria {
	if c.MinAnsweredRatio == "" {
		c.MinAnsweredRatio = defaultMinAnsweredRatio
	}
	if c.MaxTimeoutRatio == "" {
		c.MaxTimeoutRatio = defaultMaxTimeoutRatio
	}
	if c.MaxRejectRatio == "" {
		c.MaxRejectRatio = defaultMaxRejectRatio
	}
	if c.MaxErrors == nil {
		zero := int64(0)
		c.MaxErrors = &zero
	}
	return c
}

func ratio(s, def string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil { // the CRD's pattern keeps this from happening
		v, _ = strconv.ParseFloat(def, 64)
	}
	return v
}

func share(n, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

func percent(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }

// loadTestVerdict checks a run's summary against the criteria: "" when it passes, else the
// reason of the first criterion missed and a message with the figures and the server-side
// drops. Pure.
func loadTestVerdict(c aaav1.LoadTestSuccessCriteria, s *summary.Summary) (reason, message string) {
	c = successCriteriaDefaults(c)
	minAnswered := ratio(c.MinAnsweredRatio, defaultMinAnsweredRatio)
	maxTimeouts := ratio(c.MaxTimeoutRatio, defaultMaxTimeoutRatio)
	maxRejects := ratio(c.MaxRejectRatio, defaultMaxRejectRatio)
	// The requests that ended: answered, timed out or failed. Those still in flight when the
	// run ended (aborted, up to one per worker) had no chance to be answered and do not count.
	ended := s.Answered + s.Timeouts + s.Errors
	answered, timeouts := share(s.Answered, ended), share(s.Timeouts, ended)
	auth := s.Accepts + s.Rejects
	switch {
	case s.Sent == 0:
		reason, message = ReasonNothingSent, "aaa-loadgen sent no request"
	case s.Answered == 0:
		reason, message = ReasonNoAnswer, fmt.Sprintf("no request was answered: %d sent, %d timeouts, %d errors", s.Sent, s.Timeouts, s.Errors)
	case answered < minAnswered:
		reason, message = ReasonAnsweredBelowMinimum, fmt.Sprintf("%s of the requests answered (%d of %d that ended), below spec.successCriteria.minAnsweredRatio %s",
			percent(answered), s.Answered, ended, c.MinAnsweredRatio)
	case timeouts > maxTimeouts:
		reason, message = ReasonTimeoutsAboveMaximum, fmt.Sprintf("%s of the requests timed out (%d of %d that ended), above spec.successCriteria.maxTimeoutRatio %s",
			percent(timeouts), s.Timeouts, ended, c.MaxTimeoutRatio)
	case int64(min(s.Errors, 1<<62)) > *c.MaxErrors:
		reason, message = ReasonErrorsAboveMaximum, fmt.Sprintf("%d invalid replies or socket errors, above spec.successCriteria.maxErrors %d",
			s.Errors, *c.MaxErrors)
	case auth > 0 && share(s.Rejects, auth) > maxRejects:
		reason, message = ReasonRejectsAboveMaximum, fmt.Sprintf("%s of the Access-Requests rejected (%d of %d), above spec.successCriteria.maxRejectRatio %s: does the cluster's subscriber source know spec.users?",
			percent(share(s.Rejects, auth)), s.Rejects, auth, c.MaxRejectRatio)
	default:
		return "", ""
	}
	if d := dropsText(s.Dropped); d != "" {
		message += "; policing dropped " + d
		if s.Dropped["unknown_client"] > 0 {
			message += " (unknown_client: the load generator's pod address is not a client of the AAACluster: see the clients.yaml of spec.radius.clientsSecret and spec.secretRef)"
		}
	} else if s.Answered < s.Sent {
		message += "; policing reported no drops (server metrics off, or the requests never reached it)"
	}
	return reason, message
}

// dropsText is "reason=count, ..." by count, largest first. Pure.
func dropsText(d map[string]uint64) string {
	keys := make([]string, 0, len(d))
	for k, v := range d {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if d[keys[i]] != d[keys[j]] {
			return d[keys[i]] > d[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, d[k])
	}
	return strings.Join(parts, ", ")
}
