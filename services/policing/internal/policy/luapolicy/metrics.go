package luapolicy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Metrics are the engine's metrics, one value per node (an engine's reloads keep them).
type Metrics struct {
	// perHook are the children of the per-hook metrics, looked up once: a hot path pays no
	// label lookup.
	perHook [numHooks]struct {
		runs, reuses prometheus.Counter
		duration     prometheus.Observer
	}
	disconnects *prometheus.CounterVec // the node's shared metrics.PolicyDisconnects
	// Runs counts hook executions (not reuses).
	Runs *prometheus.CounterVec
	// Reuses counts decisions reused because the hook's declared inputs had not changed.
	Reuses *prometheus.CounterVec
	// Errors counts failed hook calls by kind; the request then follows policy.lua.failMode.
	Errors *prometheus.CounterVec
	// Duration is the time of one hook execution (reuses are not observed).
	Duration *prometheus.HistogramVec
	// Loads counts script loads (start, reloads, SIGHUP) by result; a rejected script
	// leaves the previous one in force.
	Loads *prometheus.CounterVec
	// Failed counts requests decided by the fail mode after a hook error, by mode.
	Failed *prometheus.CounterVec
}

// NewMetrics builds the metrics with f (zero: unregistered); shared holds the disconnects
// the script marks.
func NewMetrics(f metrics.Factory, shared *metrics.Metrics) *Metrics {
	m := &Metrics{
		Runs:     f.CounterVec("policy_lua_runs_total", "Lua policy hook executions, by hook.", "hook"),
		Reuses:   f.CounterVec("policy_lua_reuses_total", "Lua policy decisions reused (memoized: the hook had decided for the same declared inputs), by hook.", "hook"),
		Errors:   f.CounterVec("policy_lua_errors_total", "Lua policy hook calls that failed, by hook and kind (runtime, budget, decision, input, busy).", "hook", "kind"),
		Duration: f.HistogramVec("policy_lua_run_duration_seconds", "Duration of one Lua policy hook execution, by hook (reuses excluded).", []float64{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 1e-2, .1}, "hook"),
		Loads:    f.CounterVec("policy_lua_loads_total", "Lua policy script loads (compile, run, selftest), by result (ok, rejected).", "result"),
		Failed:   f.CounterVec("policy_lua_fail_decisions_total", "Requests decided by policy.lua.failMode after a hook error: closed (rejected), open (built-in policy), acct (accounting stored without a decision), gx_initial/gx_update (the data policy alone decided).", "mode"),
	}
	for h := range numHooks {
		n := hookNames[h]
		m.perHook[h].runs, m.perHook[h].reuses, m.perHook[h].duration = m.Runs.WithLabelValues(n), m.Reuses.WithLabelValues(n), m.Duration.WithLabelValues(n)
	}
	m.disconnects = shared.PolicyDisconnects
	return m
}

// Error kinds (label values of Errors).
const (
	ErrKindRuntime  = "runtime"  // the script raised an error (error(), a nil index, a failed assert...)
	ErrKindBudget   = "budget"   // the call ran past policy.lua.budget
	ErrKindMemory   = "memory"   // the call allocated more than its quota (16 MiB)
	ErrKindDecision = "decision" // a decision the API refused (unknown attribute, bad value, wrong hook)
	ErrKindInput    = "input"    // an accessor refused a read (unknown attribute, undeclared input)
	ErrKindBusy     = "busy"     // no Lua state became free within the budget
)
