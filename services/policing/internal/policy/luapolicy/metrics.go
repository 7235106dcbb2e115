package luapolicy

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/openaaa/openaaa/services/policing/internal/metrics"
)

// Error kinds (label values of Errors).
const (
	ErrKindRuntime  = "runtime"  // the script raised an error (error(), a nil index, a failed assert...)
	ErrKindBudget   = "budget"   // the call ran past policy.lua.budget
	ErrKindMemory   = "memory"   // the call allocated more than its quota (16 MiB)
	ErrKindDecision = "decision" // a decision the API refused (unknown attribute, bad value, wrong hook)
	ErrKindInput    = "input"    // an accessor refused a read (unknown attribute, undeclared input)
	ErrKindBusy     = "busy"     // no Lua state became free within the budget
)

var (
	// Runs counts hook executions (not reuses).
	Runs = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "policy_lua", Name: "runs_total",
		Help: "Lua policy hook executions, by hook.",
	}, []string{"hook"})

	// Reuses counts decisions reused because the hook's declared inputs had not changed.
	Reuses = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "policy_lua", Name: "reuses_total",
		Help: "Lua policy decisions reused (memoized: the hook's declared inputs were unchanged), by hook.",
	}, []string{"hook"})

	// Errors counts failed hook calls by kind; the request then follows policy.lua.failMode.
	Errors = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "policy_lua", Name: "errors_total",
		Help: "Lua policy hook calls that failed, by hook and kind (runtime, budget, decision, input, busy).",
	}, []string{"hook", "kind"})

	// Duration is the time of one hook execution (reuses are not observed).
	Duration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: "policy_lua", Name: "run_duration_seconds",
		Help:    "Duration of one Lua policy hook execution, by hook (reuses excluded).",
		Buckets: []float64{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 1e-2, .1},
	}, []string{"hook"})

	// Loads counts script loads (start, reloads, SIGHUP) by result; a rejected script
	// leaves the previous one in force.
	Loads = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "policy_lua", Name: "loads_total",
		Help: "Lua policy script loads (compile, run, selftest), by result (ok, rejected).",
	}, []string{"result"})

	// Failed counts requests decided by the fail mode after a hook error, by mode.
	Failed = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "policy_lua", Name: "fail_decisions_total",
		Help: "Requests decided by policy.lua.failMode after a hook error: closed (rejected), open (built-in policy), acct (accounting stored without a decision), gx_initial/gx_update (the data policy alone decided).",
	}, []string{"mode"})
)

// perHook are the children of the per-hook metrics, looked up once: a hot path pays no
// label lookup.
var perHook = func() (m [numHooks]struct {
	runs, reuses prometheus.Counter
	duration     prometheus.Observer
}) {
	for h := range numHooks {
		n := hookNames[h]
		m[h].runs, m[h].reuses, m[h].duration = Runs.WithLabelValues(n), Reuses.WithLabelValues(n), Duration.WithLabelValues(n)
	}
	return m
}()
