// Package report turns a run into the capacity-test report of the field (incoming TPS,
// outgoing TPS, busy workers, avg auth ms, avg acct ms) plus latency percentiles per message
// type and the servers' CPU per transaction; as a human table or JSON. compare.go puts the
// reports of an A/B benchmark side by side.
package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/openaaa/openaaa/services/loadgen/internal/engine"
	"github.com/openaaa/openaaa/services/loadgen/internal/hist"
	"github.com/openaaa/openaaa/services/loadgen/summary"
)

// Latency is the summary of one histogram, in milliseconds.
type Latency struct {
	Count uint64  `json:"count"`
	Avg   float64 `json:"avgMs"`
	P50   float64 `json:"p50Ms"`
	P99   float64 `json:"p99Ms"`
	P999  float64 `json:"p999Ms"`
	Max   float64 `json:"maxMs"`
}

// Summarize reads h.
func Summarize(h *hist.H) Latency {
	return Latency{Count: h.Count(), Avg: h.Mean(), P50: h.Quantile(0.50), P99: h.Quantile(0.99), P999: h.Quantile(0.999), Max: h.Max()}
}

// Process is a server process's resource use over the run.
type Process struct {
	PID        int     `json:"pid"`
	CPUSeconds float64 `json:"cpuSeconds"`
	RSSBefore  int64   `json:"rssBytesBefore"`
	RSSAfter   int64   `json:"rssBytesAfter"`
	// RSSMid is sampled halfway through the run, RSSMax the largest sample (every 500 ms).
	RSSMid int64 `json:"rssBytesMid,omitempty"`
	RSSMax int64 `json:"rssBytesMax,omitempty"`
}

// Report is one run.
type Report struct {
	Label        string   `json:"label,omitempty"`
	Mode         string   `json:"mode"`
	AuthMethod   string   `json:"authMethod"`
	Interims     int      `json:"interims"`
	Distribution string   `json:"distribution"`
	Targets      []string `json:"targets"`
	Concurrency  int      `json:"concurrency"`
	// OfferedRate > 0: open loop at this many messages/s.
	OfferedRate float64 `json:"offeredRate,omitempty"`
	// FailoverHoldDownSeconds > 0: failover on (a retransmission to the next target, a
	// target that timed out skipped this long).
	FailoverHoldDownSeconds float64   `json:"failoverHoldDownSeconds,omitempty"`
	Started                 time.Time `json:"started"`
	Seconds                 float64   `json:"seconds"`

	IncomingTPS float64 `json:"incomingTPS"`
	// From the servers' /metrics (absent without --metrics).
	OutgoingTPS    *float64           `json:"outgoingTPS,omitempty"`
	WorkersBusyAvg *float64           `json:"workersBusyAvg,omitempty"`
	WorkersBusyMax *float64           `json:"workersBusyMax,omitempty"`
	Workers        *float64           `json:"workers,omitempty"`
	Dropped        map[string]float64 `json:"droppedByReason,omitempty"`
	SessionsActive *[2]float64        `json:"serverSessionsActive,omitempty"` // before, after
	ServerRequests map[string]float64 `json:"serverRequests,omitempty"`

	AvgAuthMs float64            `json:"avgAuthMs"`
	AvgAcctMs float64            `json:"avgAcctMs"`
	Latency   map[string]Latency `json:"latency"`

	Sent            uint64            `json:"sent"`
	Answered        uint64            `json:"answered"`
	Accepts         uint64            `json:"accepts"`
	Rejects         uint64            `json:"rejects"`
	AcctResponses   uint64            `json:"acctResponses"`
	Timeouts        uint64            `json:"timeouts"`
	Retransmissions uint64            `json:"retransmissions"`
	Errors          uint64            `json:"errors"`
	ErrorSamples    map[string]uint64 `json:"errorSamples,omitempty"`
	Aborted         uint64            `json:"aborted"`
	Late            uint64            `json:"late"`
	Offered         uint64            `json:"offered,omitempty"`
	SendLag         *Latency          `json:"sendLag,omitempty"`
	Service         *Latency          `json:"serviceLatency,omitempty"`
	Unsent          uint64            `json:"unsent,omitempty"`
	Sessions        uint64            `json:"sessions"`
	SessionsDone    uint64            `json:"sessionsCompleted"`
	PerTarget       []uint64          `json:"perTarget"`
	// TargetReports is the report of each target (one per DC), in the order of Targets.
	TargetReports []TargetReport `json:"targetReports,omitempty"`

	// EAPRounds (--auth eap-*): the round trips of the authentications (each authentication is
	// one transaction: Sent, Answered, the TPS and the latency count authentications).
	EAPRounds          uint64  `json:"eapRounds,omitempty"`
	EAPRoundsPerSecond float64 `json:"eapRoundsPerSecond,omitempty"`

	Servers []Process `json:"servers,omitempty"`
	// ServerCPUSeconds is the CPU the given server processes used during the run, and
	// CPUMicrosPerTx that divided by the answered requests.
	ServerCPUSeconds  *float64 `json:"serverCPUSeconds,omitempty"`
	CPUMicrosPerTx    *float64 `json:"cpuMicrosPerTransaction,omitempty"`
	LoadgenCPUSeconds float64  `json:"loadgenCPUSeconds"`

	// Timeline is the run second by second (index: seconds since Started).
	Timeline []Second `json:"timeline,omitempty"`
	// GapSeconds, the NAS-visible gap: the seconds of the timeline in which at least one
	// request failed after all its transmissions.
	GapSeconds []int `json:"nasVisibleGapSeconds"`
	// Acked (engine.Config.TrackAcked) goes to its own file (WriteAcked), not the JSON.
	Acked []engine.AckedSession `json:"-"`
}

// Second is one second of the timeline: requests answered and failed (no valid reply after
// every transmission) in it, and retransmissions sent.
type Second struct {
	Answered        uint64 `json:"answered"`
	Failed          uint64 `json:"failed"`
	Retransmissions uint64 `json:"retransmissions"`
}

// TargetReport is one target's share of the run: what it answered and how fast, and its
// servers' own figures when their /metrics were given for this target.
type TargetReport struct {
	Name           string   `json:"name"`
	IncomingTPS    float64  `json:"incomingTPS"`
	OutgoingTPS    *float64 `json:"outgoingTPS,omitempty"`
	WorkersBusyAvg *float64 `json:"workersBusyAvg,omitempty"`
	Workers        *float64 `json:"workers,omitempty"`
	AvgAuthMs      float64  `json:"avgAuthMs"`
	AvgAcctMs      float64  `json:"avgAcctMs"`
	P99Ms          float64  `json:"p99Ms"`
	Sent           uint64   `json:"sent"`
	Answered       uint64   `json:"answered"`
	Timeouts       uint64   `json:"timeouts"`
	Errors         uint64   `json:"errors"`
	Accepts        uint64   `json:"accepts"`
	Rejects        uint64   `json:"rejects"`
}

// Latency keys beyond the message kinds.
const (
	KeyAcct = "acct" // all accounting messages
	KeyAll  = "all"  // every message
)

// New builds the report of res. cfg describes the run.
func New(cfg *engine.Config, res *engine.Result) *Report {
	r := &Report{
		Mode:            cfg.Mode.String(),
		AuthMethod:      cfg.Auth.String(),
		Interims:        cfg.Interims,
		Distribution:    cfg.Distribution.String(),
		Concurrency:     cfg.Concurrency,
		OfferedRate:     cfg.Rate,
		Started:         res.Started,
		Seconds:         res.Elapsed.Seconds(),
		GapSeconds:      []int{},
		IncomingTPS:     res.AnsweredPerSecond(),
		Sent:            res.Sent,
		Answered:        res.Answered,
		EAPRounds:       res.Rounds,
		Accepts:         res.Accepts,
		Rejects:         res.Rejects,
		AcctResponses:   res.AcctResponses,
		Timeouts:        res.Timeouts,
		Retransmissions: res.Retransmissions,
		Errors:          res.Errors,
		Aborted:         res.Aborted,
		Late:            res.Late,
		Offered:         res.Offered,
		Unsent:          res.Unsent,
		Sessions:        res.Sessions,
		SessionsDone:    res.SessionsDone,
		PerTarget:       res.PerTarget,
		Latency:         map[string]Latency{},
	}
	if len(res.ErrorSamples) > 0 {
		r.ErrorSamples = res.ErrorSamples
	}
	if r.Seconds > 0 {
		r.EAPRoundsPerSecond = float64(res.Rounds) / r.Seconds
	}
	r.Acked = res.Acked
	if cfg.Failover {
		r.FailoverHoldDownSeconds = cfg.HoldDown.Seconds()
	}
	for i, s := range res.Timeline {
		r.Timeline = append(r.Timeline, Second(s))
		if s.Failed > 0 {
			r.GapSeconds = append(r.GapSeconds, i)
		}
	}
	if res.SendLag.Count() > 0 {
		l := Summarize(&res.SendLag)
		r.SendLag = &l
	}
	if res.Service.Count() > 0 {
		l := Summarize(&res.Service)
		r.Service = &l
	}
	for _, t := range cfg.Targets {
		r.Targets = append(r.Targets, t.Name)
	}
	var acct, all hist.H
	for k := engine.Kind(0); k < engine.NumKinds; k++ {
		h := &res.Latency[k]
		all.Merge(h)
		if k.IsAcct() {
			acct.Merge(h)
		}
		if h.Count() > 0 {
			r.Latency[k.String()] = Summarize(h)
		}
	}
	if acct.Count() > 0 {
		r.Latency[KeyAcct] = Summarize(&acct)
	}
	r.Latency[KeyAll] = Summarize(&all)
	r.AvgAuthMs = res.Latency[engine.KindAuth].Mean()
	r.AvgAcctMs = acct.Mean()
	for i, t := range res.Targets {
		var both hist.H
		both.Merge(&t.Auth)
		both.Merge(&t.Acct)
		tr := TargetReport{
			AvgAuthMs: t.Auth.Mean(), AvgAcctMs: t.Acct.Mean(), P99Ms: both.Quantile(0.99),
			Answered: t.Answered, Timeouts: t.Timeouts, Errors: t.Errors, Accepts: t.Accepts, Rejects: t.Rejects,
		}
		if i < len(r.Targets) {
			tr.Name = r.Targets[i]
		}
		if i < len(res.PerTarget) {
			tr.Sent = res.PerTarget[i]
		}
		if r.Seconds > 0 {
			tr.IncomingTPS = float64(t.Answered) / r.Seconds
		}
		r.TargetReports = append(r.TargetReports, tr)
	}
	return r
}

// SetTargetMetrics records the servers' own figures of target i (its transactions over the
// run and its busy-worker samples), as SetMetrics does for the whole run.
func (r *Report) SetTargetMetrics(i int, transactions float64, busy []float64, workers float64) {
	if i < 0 || i >= len(r.TargetReports) {
		return
	}
	t := &r.TargetReports[i]
	t.OutgoingTPS, t.WorkersBusyAvg, _, t.Workers = serverFigures(r.Seconds, transactions, busy, workers)
}

// serverFigures turns a run's transactions and busy-worker samples into outgoing TPS, the
// average and maximum busy workers and the worker count (nil when unknown).
func serverFigures(seconds, transactions float64, busy []float64, workers float64) (out, busyAvg, busyMax, wk *float64) {
	if seconds > 0 {
		v := transactions / seconds
		out = &v
	}
	if len(busy) > 0 {
		var sum, mx float64
		for _, b := range busy {
			sum += b
			mx = max(mx, b)
		}
		avg := sum / float64(len(busy))
		busyAvg, busyMax = &avg, &mx
	}
	if workers > 0 {
		wk = &workers
	}
	return out, busyAvg, busyMax, wk
}

// Summary is the compact form of r for a container's termination message.
func (r *Report) Summary() summary.Summary {
	s := summary.Summary{
		Seconds: r.Seconds,
		Figures: summary.Figures{
			IncomingTPS: r.IncomingTPS, OutgoingTPS: r.OutgoingTPS, WorkersBusy: r.WorkersBusyAvg, Workers: r.Workers,
			AvgAuthMs: r.AvgAuthMs, AvgAcctMs: r.AvgAcctMs, P99Ms: r.Latency[KeyAll].P99,
			Answered: r.Answered, Timeouts: r.Timeouts, Errors: r.Errors, Accepts: r.Accepts, Rejects: r.Rejects,
		},
		Sent: r.Sent, Sessions: r.Sessions, SessionsDone: r.SessionsDone,
	}
	for k, v := range r.Dropped {
		if v >= 0.5 {
			if s.Dropped == nil {
				s.Dropped = map[string]uint64{}
			}
			s.Dropped[k] = uint64(v + 0.5)
		}
	}
	for _, t := range r.TargetReports {
		s.Targets = append(s.Targets, summary.Target{Name: t.Name, Figures: summary.Figures{
			IncomingTPS: t.IncomingTPS, OutgoingTPS: t.OutgoingTPS, WorkersBusy: t.WorkersBusyAvg, Workers: t.Workers,
			AvgAuthMs: t.AvgAuthMs, AvgAcctMs: t.AvgAcctMs, P99Ms: t.P99Ms,
			Answered: t.Answered, Timeouts: t.Timeouts, Errors: t.Errors, Accepts: t.Accepts, Rejects: t.Rejects,
		}})
	}
	return s
}

// SetServers records the servers' CPU and memory and derives CPU µs per transaction
// (answered request).
func (r *Report) SetServers(ps []Process) {
	if len(ps) == 0 {
		return
	}
	r.Servers = ps
	var cpu float64
	for _, p := range ps {
		cpu += p.CPUSeconds
	}
	r.ServerCPUSeconds = &cpu
	if r.Answered > 0 {
		us := cpu * 1e6 / float64(r.Answered)
		r.CPUMicrosPerTx = &us
	}
}

// SetMetrics records the servers' own figures: transactions (outgoing TPS over the run's
// seconds), busy workers (average and maximum of the samples), drops and requests.
func (r *Report) SetMetrics(transactions float64, busy []float64, workers float64, dropped, requests map[string]float64) {
	r.OutgoingTPS, r.WorkersBusyAvg, r.WorkersBusyMax, r.Workers = serverFigures(r.Seconds, transactions, busy, workers)
	r.Dropped = dropped
	r.ServerRequests = requests
}

// WriteAcked writes the accounting records the servers acknowledged, one session a line:
// "Acct-Session-Id starts interims stops" (hack/acct-check reads it back against Cassandra).
func (r *Report) WriteAcked(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, a := range r.Acked {
		fmt.Fprintf(bw, "%s %d %d %d\n", a.ID, a.Starts, a.Interims, a.Stops)
	}
	return bw.Flush()
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func optf(p *float64, format string) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

// thousands formats v with a thousands separator and one decimal.
func thousands(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String() + "." + frac
	if neg {
		out = "-" + out
	}
	return out
}

// WriteText writes the human report.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	loop := fmt.Sprintf("closed loop, concurrency %d", r.Concurrency)
	if r.OfferedRate > 0 {
		loop = fmt.Sprintf("open loop, %s msg/s offered, up to %d sessions in flight", thousands(r.OfferedRate), r.Concurrency)
	}
	title := r.Mode
	if r.Mode != "acct" {
		title += " (" + r.AuthMethod + ")"
	}
	if r.Mode != "auth" {
		title += fmt.Sprintf(", %d interims", r.Interims)
	}
	if r.Label != "" {
		fmt.Fprintf(&b, "[%s] ", r.Label)
	}
	fmt.Fprintf(&b, "%s; %s; %d target(s) %s; %.1f s\n\n", title, loop, len(r.Targets), r.Distribution, r.Seconds)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "incoming TPS\toutgoing TPS\tworkers busy\tavg auth ms\tavg acct ms\tp99 ms\tCPU µs/tx\t\n")
	busy := "-"
	if r.WorkersBusyAvg != nil {
		busy = fmt.Sprintf("%.1f (max %.0f", *r.WorkersBusyAvg, *r.WorkersBusyMax)
		if r.Workers != nil {
			busy += fmt.Sprintf(" of %.0f", *r.Workers)
		}
		busy += ")"
	}
	out := "-"
	if r.OutgoingTPS != nil {
		out = thousands(*r.OutgoingTPS)
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%s\t\n", thousands(r.IncomingTPS), out, busy, r.AvgAuthMs, r.AvgAcctMs, r.Latency[KeyAll].P99, optf(r.CPUMicrosPerTx, "%.1f"))
	tw.Flush()
	b.WriteString("\n")

	if len(r.TargetReports) > 1 {
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "target\tincoming TPS\toutgoing TPS\tworkers busy\tavg auth ms\tavg acct ms\tp99 ms\ttimeouts\t\n")
		for _, t := range r.TargetReports {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t%.3f\t%.3f\t%d\t\n", t.Name, thousands(t.IncomingTPS),
				optf(t.OutgoingTPS, "%.1f"), optf(t.WorkersBusyAvg, "%.1f"), t.AvgAuthMs, t.AvgAcctMs, t.P99Ms, t.Timeouts)
		}
		tw.Flush()
		b.WriteString("\n")
	}

	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "message\tcount\tavg ms\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\t\n")
	keys := []string{}
	for k := engine.Kind(0); k < engine.NumKinds; k++ {
		keys = append(keys, k.String())
	}
	keys = append(keys, KeyAcct, KeyAll)
	for _, k := range keys {
		l, ok := r.Latency[k]
		if !ok || (l.Count == 0 && k != KeyAll) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", k, l.Count, l.Avg, l.P50, l.P99, l.P999, l.Max)
	}
	tw.Flush()
	b.WriteString("\n")

	fmt.Fprintf(&b, "requests: %d sent, %d answered (%d accept, %d reject, %d accounting); %d timeouts, %d retransmissions, %d errors, %d in flight at the end, %d late replies\n",
		r.Sent, r.Answered, r.Accepts, r.Rejects, r.AcctResponses, r.Timeouts, r.Retransmissions, r.Errors, r.Aborted, r.Late)
	if r.EAPRounds > 0 {
		fmt.Fprintf(&b, "EAP: %s authentications/s (%s accepted/s), %s rounds/s, %.1f rounds per authentication\n",
			thousands(r.IncomingTPS), thousands(float64(r.Accepts)/max(r.Seconds, 1e-9)), thousands(r.EAPRoundsPerSecond), float64(r.EAPRounds)/max(float64(r.Sent), 1))
	}
	fmt.Fprintf(&b, "sessions: %d begun, %d completed", r.Sessions, r.SessionsDone)
	if len(r.PerTarget) > 1 {
		fmt.Fprintf(&b, "; messages per target %v", r.PerTarget)
	}
	b.WriteString("\n")
	if r.OfferedRate > 0 {
		pct := 0.0
		if r.Offered > 0 {
			pct = 100 * float64(r.Answered) / float64(r.Offered)
		}
		fmt.Fprintf(&b, "open loop: %d offered (%s/s), %d answered (%s/s, %.1f%%), %d never sent (every session waiting for a reply and no new one possible)\n",
			r.Offered, thousands(float64(r.Offered)/max(r.Seconds, 1e-9)), r.Answered, thousands(r.IncomingTPS), pct, r.Unsent)
		if r.SendLag != nil {
			fmt.Fprintf(&b, "generator send lag behind schedule: p50 %.3f ms, p99 %.3f ms, max %.3f ms (large: the generator is short of CPU)\n", r.SendLag.P50, r.SendLag.P99, r.SendLag.Max)
		}
		if r.Service != nil {
			fmt.Fprintf(&b, "latency from the actual send (the server's part): p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms\n", r.Service.P50, r.Service.P99, r.Service.P999)
		}
	}
	if len(r.GapSeconds) > 0 {
		fmt.Fprintf(&b, "NAS-visible gap: %d s with failed requests (seconds %v of the run)\n", len(r.GapSeconds), r.GapSeconds)
	}
	for k, n := range r.ErrorSamples {
		fmt.Fprintf(&b, "error: %s (%d)\n", k, n)
	}
	if len(r.Dropped) > 0 {
		b.WriteString("server drops:")
		for _, k := range sortedKeys(r.Dropped) {
			fmt.Fprintf(&b, " %s=%.0f", k, r.Dropped[k])
		}
		b.WriteString("\n")
	}
	if r.SessionsActive != nil {
		fmt.Fprintf(&b, "server active sessions: %.0f → %.0f\n", r.SessionsActive[0], r.SessionsActive[1])
	}
	for _, p := range r.Servers {
		if p.RSSMid == 0 { // a run shorter than the sampling interval has no samples
			fmt.Fprintf(&b, "server pid %d: %.2f CPU s, RSS %.1f → %.1f MiB\n", p.PID, p.CPUSeconds, mib(p.RSSBefore), mib(p.RSSAfter))
		} else {
			fmt.Fprintf(&b, "server pid %d: %.2f CPU s, RSS %.1f → %.1f (halfway) → %.1f MiB (max %.1f)\n", p.PID, p.CPUSeconds, mib(p.RSSBefore), mib(p.RSSMid), mib(p.RSSAfter), mib(p.RSSMax))
		}
	}
	if r.ServerCPUSeconds != nil {
		fmt.Fprintf(&b, "server CPU: %.2f s for %d answered requests = %s µs per transaction\n", *r.ServerCPUSeconds, r.Answered, optf(r.CPUMicrosPerTx, "%.1f"))
	}
	fmt.Fprintf(&b, "load generator CPU: %.2f s (%.0f%% of one core)\n", r.LoadgenCPUSeconds, 100*r.LoadgenCPUSeconds/max(r.Seconds, 1e-9))
	_, err := io.WriteString(w, b.String())
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
