package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Row is one run (or the median of several) in the A/B table.
type Row struct {
	TPS      float64  `json:"tps"`
	P50      float64  `json:"p50Ms"`
	P99      float64  `json:"p99Ms"`
	CPUPerTx *float64 `json:"cpuMicrosPerTransaction,omitempty"`
}

func rowOf(r *Report) Row {
	l := r.Latency[KeyAll]
	return Row{TPS: r.IncomingTPS, P50: l.P50, P99: l.P99, CPUPerTx: r.CPUMicrosPerTx}
}

// Ratio is B/A for each column (0 where A is 0 or a value is missing).
type Ratio struct {
	TPS      float64 `json:"tps"`
	P99      float64 `json:"p99"`
	CPUPerTx float64 `json:"cpuPerTransaction"`
}

func ratio(a, b Row) Ratio {
	div := func(x, y float64) float64 {
		if y == 0 {
			return 0
		}
		return x / y
	}
	r := Ratio{TPS: div(b.TPS, a.TPS), P99: div(b.P99, a.P99)}
	if a.CPUPerTx != nil && b.CPUPerTx != nil {
		r.CPUPerTx = div(*b.CPUPerTx, *a.CPUPerTx)
	}
	return r
}

// Median is the median of xs (the mean of the middle two for an even count).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func medianRow(rows []Row) Row {
	var tps, p50, p99, cpu []float64
	for _, r := range rows {
		tps = append(tps, r.TPS)
		p50 = append(p50, r.P50)
		p99 = append(p99, r.P99)
		if r.CPUPerTx != nil {
			cpu = append(cpu, *r.CPUPerTx)
		}
	}
	m := Row{TPS: Median(tps), P50: Median(p50), P99: Median(p99)}
	if len(cpu) > 0 {
		c := Median(cpu)
		m.CPUPerTx = &c
	}
	return m
}

// Overload summarises an open-loop run past the maximum.
type Overload struct {
	Label          string             `json:"label"`
	OfferedPerSec  float64            `json:"offeredPerSecond"`
	SentPerSec     float64            `json:"sentPerSecond"`
	AnsweredPerSec float64            `json:"answeredPerSecond"`
	MaxTPS         float64            `json:"maxTPS"`
	MaxLabel       string             `json:"maxLabel,omitempty"`
	GoodputPct     float64            `json:"goodputPercentOfMax"`
	P99            float64            `json:"p99MsOfAnswered"`
	Timeouts       uint64             `json:"timeouts"`
	Unsent         uint64             `json:"unsent"`
	Dropped        map[string]float64 `json:"droppedByReason,omitempty"`
	RSSBefore      int64              `json:"rssBytesBefore"`
	RSSMid         int64              `json:"rssBytesMid"`
	RSSAfter       int64              `json:"rssBytesAfter"`
	CPUPerTx       *float64           `json:"cpuMicrosPerTransaction,omitempty"`
	SendLagP99     float64            `json:"generatorSendLagP99Ms"`
	ServiceP99     float64            `json:"serviceP99Ms"`
	Sessions       *[2]float64        `json:"serverSessionsActive,omitempty"`
	// At1x is the open-loop run at 1× the rate base just before, on the same store: the
	// answered rate of the same workload (many sessions in progress, no retransmission) at
	// the maximum, as opposed to the closed loop's few sessions in progress.
	At1x *Overload `json:"at1x,omitempty"`
}

// Comparison is the A/B benchmark.
type Comparison struct {
	Labels      [2]string      `json:"labels"`
	Runs        [2][]Row       `json:"runs"`
	Ratios      []Ratio        `json:"ratios"`
	Median      [2]Row         `json:"median"`
	MedianRatio Ratio          `json:"medianRatio"`
	Ceiling     map[string]Row `json:"ceiling,omitempty"`
	Overload    []Overload     `json:"overload,omitempty"`
	OverloadMax []Row          `json:"overloadMax,omitempty"`
	// RateBase is the maximum the overload's offered rate was derived from, when it is not
	// the overload runs' own maximum (e.g. measured on a fresh store before the store filled).
	RateBase *Overload     `json:"rateBase,omitempty"`
	Targets  []TargetCheck `json:"targets"`
	Setup    string        `json:"setup"`
}

// TargetCheck is one of the targets and whether the run met it.
type TargetCheck struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Met   bool   `json:"met"`
}

// Compare builds the table from the runs (labels: the first one seen is the baseline A, the
// second the candidate B; runs are paired in order), ceiling runs and overload runs.
func Compare(runs, ceiling, overload []*Report) (*Comparison, error) {
	c := &Comparison{Ceiling: map[string]Row{}}
	seen := 0
	for _, r := range runs {
		i := -1
		for j := 0; j < seen; j++ {
			if c.Labels[j] == r.Label {
				i = j
			}
		}
		if i < 0 {
			if seen == 2 {
				return nil, fmt.Errorf("compare: more than two labels (%s, %s, %s)", c.Labels[0], c.Labels[1], r.Label)
			}
			i = seen
			c.Labels[i] = r.Label
			seen++
		}
		c.Runs[i] = append(c.Runs[i], rowOf(r))
	}
	if len(c.Runs[0]) == 0 || len(c.Runs[1]) == 0 {
		return nil, fmt.Errorf("compare: need runs of two labels (have %q: %d, %q: %d)", c.Labels[0], len(c.Runs[0]), c.Labels[1], len(c.Runs[1]))
	}
	for i := 0; i < min(len(c.Runs[0]), len(c.Runs[1])); i++ {
		c.Ratios = append(c.Ratios, ratio(c.Runs[0][i], c.Runs[1][i]))
	}
	c.Median[0], c.Median[1] = medianRow(c.Runs[0]), medianRow(c.Runs[1])
	c.MedianRatio = ratio(c.Median[0], c.Median[1])
	c.Setup = setupOf(runs[0])
	for _, r := range ceiling {
		c.Ceiling[r.Label] = rowOf(r)
	}
	for _, r := range overload {
		o := overloadOf(r)
		o.MaxLabel, o.MaxTPS = c.Labels[1]+" median", c.Median[1].TPS
		if o.MaxTPS > 0 {
			o.GoodputPct = 100 * o.AnsweredPerSec / o.MaxTPS
		}
		c.Overload = append(c.Overload, o)
	}
	c.Targets = c.checks()
	return c, nil
}

// overloadOf summarises an open-loop run.
func overloadOf(r *Report) Overload {
	o := Overload{Label: r.Label, AnsweredPerSec: r.IncomingTPS, P99: r.Latency[KeyAll].P99,
		Timeouts: r.Timeouts, Unsent: r.Unsent, Dropped: r.Dropped, CPUPerTx: r.CPUMicrosPerTx, Sessions: r.SessionsActive}
	if r.Seconds > 0 {
		o.OfferedPerSec = float64(r.Offered) / r.Seconds
		o.SentPerSec = float64(r.Sent) / r.Seconds
	}
	if r.SendLag != nil {
		o.SendLagP99 = r.SendLag.P99
	}
	if r.Service != nil {
		o.ServiceP99 = r.Service.P99
	}
	for _, p := range r.Servers {
		o.RSSBefore += p.RSSBefore
		o.RSSMid += p.RSSMid
		o.RSSAfter += p.RSSAfter
	}
	return o
}

// SetAt1x pairs the overload runs, in order, with open-loop runs at 1× the rate base.
func (c *Comparison) SetAt1x(runs ...*Report) error {
	if len(runs) != len(c.Overload) {
		return fmt.Errorf("compare: %d runs at 1× for %d overload runs (want one per run)", len(runs), len(c.Overload))
	}
	for i, r := range runs {
		o := overloadOf(r)
		if o.AnsweredPerSec > 0 {
			o.GoodputPct = 100 * c.Overload[i].AnsweredPerSec / o.AnsweredPerSec
		}
		c.Overload[i].At1x = &o
	}
	c.Targets = c.checks()
	return nil
}

func setupOf(r *Report) string {
	s := r.Mode
	if r.Mode != "acct" {
		s += "/" + r.AuthMethod
	}
	if r.Mode != "auth" {
		s += fmt.Sprintf(", %d interims", r.Interims)
	}
	return fmt.Sprintf("%s, closed loop, concurrency %d, %.0f s per run, %d target(s) %s", s, r.Concurrency, r.Seconds, len(r.Targets), r.Distribution)
}

// SetOverloadMax measures the overload runs against closed-loop maxima measured in the same
// setup (e.g. with the server pinned to one core) instead of the candidate's median: one for
// every run, or one per run, paired in order (each round's maximum measured just before its
// overload run, on the same store, so that a drift of the machine's speed hits both).
func (c *Comparison) SetOverloadMax(maxes ...*Report) error {
	if len(maxes) != 1 && len(maxes) != len(c.Overload) {
		return fmt.Errorf("compare: %d maxima for %d overload runs (want 1 or one per run)", len(maxes), len(c.Overload))
	}
	c.OverloadMax = nil
	for _, m := range maxes {
		c.OverloadMax = append(c.OverloadMax, rowOf(m))
	}
	for i := range c.Overload {
		m := maxes[min(i, len(maxes)-1)]
		o := &c.Overload[i]
		o.MaxTPS = m.IncomingTPS
		o.MaxLabel = m.Label
		o.GoodputPct = 0
		if o.MaxTPS > 0 {
			o.GoodputPct = 100 * o.AnsweredPerSec / o.MaxTPS
		}
	}
	c.Targets = c.checks()
	return nil
}

// SetRateBase records the maximum the overload's offered rate was derived from, and the
// goodput of the overload runs (their median) against it.
func (c *Comparison) SetRateBase(base *Report) {
	b := Overload{Label: base.Label, MaxTPS: base.IncomingTPS, CPUPerTx: base.CPUMicrosPerTx}
	var answered []float64
	for _, o := range c.Overload {
		answered = append(answered, o.AnsweredPerSec)
	}
	b.AnsweredPerSec = Median(answered)
	if b.MaxTPS > 0 {
		b.GoodputPct = 100 * b.AnsweredPerSec / b.MaxTPS
	}
	c.RateBase = &b
}

// checks evaluates the targets on B (the candidate).
func (c *Comparison) checks() []TargetCheck {
	var out []TargetCheck
	m := c.MedianRatio
	out = append(out, TargetCheck{Name: "TPS ≥ 1.5× baseline", Value: fmt.Sprintf("%.2f×", m.TPS), Met: m.TPS >= 1.5})
	out = append(out, TargetCheck{Name: "p99 ≤ baseline", Value: fmt.Sprintf("%.3f vs %.3f ms", c.Median[1].P99, c.Median[0].P99), Met: c.Median[1].P99 <= c.Median[0].P99})
	if cpu := c.Median[1].CPUPerTx; cpu != nil {
		out = append(out, TargetCheck{Name: "server CPU ≤ 30 µs/transaction", Value: fmt.Sprintf("%.1f µs", *cpu), Met: *cpu <= 30})
	}
	if len(c.Overload) == 0 {
		return out
	}
	// Several overload rounds: the goodput target on their median, RSS flat in every round.
	var good, good1x []float64
	var rss []string
	flat := true
	for _, o := range c.Overload {
		good = append(good, o.GoodputPct)
		if o.At1x != nil {
			good1x = append(good1x, o.At1x.GoodputPct)
		}
		rss = append(rss, fmt.Sprintf("%.1f → %.1f → %.1f MiB", mib(o.RSSBefore), mib(o.RSSMid), mib(o.RSSAfter)))
		flat = flat && rssFlat(o)
	}
	out = append(out, goodputCheck("overload goodput ≥ 90% of max", good))
	if len(good1x) == len(good) {
		out = append(out, goodputCheck("overload goodput ≥ 90% of the open loop at 1× (same workload)", good1x))
	}
	out = append(out, TargetCheck{Name: "overload RSS flat (second half)", Value: strings.Join(rss, "; "), Met: flat})
	return out
}

// goodputCheck: the goodput target on the median of the rounds.
func goodputCheck(name string, pcts []float64) TargetCheck {
	g := Median(pcts)
	value := fmt.Sprintf("%.1f%%", g)
	if len(pcts) > 1 {
		var each []string
		for _, p := range pcts {
			each = append(each, fmt.Sprintf("%.1f", p))
		}
		value += fmt.Sprintf(" (median of %d rounds: %s)", len(pcts), strings.Join(each, ", "))
	}
	return TargetCheck{Name: name, Value: value, Met: g >= 90}
}

// rssFlat: over the second half of the run (caches have filled by then), at most 10% or
// 16 MiB of growth, whichever is larger. Without a halfway sample: over the whole run.
func rssFlat(o Overload) bool {
	from := o.RSSMid
	if from == 0 {
		from = o.RSSBefore
	}
	return from > 0 && o.RSSAfter-from <= max(from/10, 16<<20)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func fmtCPU(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *p)
}

func fmtRatio(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", x)
}

// WriteMarkdown writes the side-by-side table, the ceiling, the overload run and the targets.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	a, bb := c.Labels[0], c.Labels[1]
	fmt.Fprintf(&b, "Flow: %s.\n\n", c.Setup)
	fmt.Fprintf(&b, "| run | %s TPS | p50 ms | p99 ms | CPU µs/tx | %s TPS | p50 ms | p99 ms | CPU µs/tx | TPS %s/%s | p99 ratio | CPU ratio |\n", a, bb, bb, a)
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, x, y Row, r Ratio) {
		fmt.Fprintf(&b, "| %s | %s | %.3f | %.3f | %s | %s | %.3f | %.3f | %s | %s | %s | %s |\n", name,
			thousands(x.TPS), x.P50, x.P99, fmtCPU(x.CPUPerTx), thousands(y.TPS), y.P50, y.P99, fmtCPU(y.CPUPerTx),
			fmtRatio(r.TPS), fmtRatio(r.P99), fmtRatio(r.CPUPerTx))
	}
	for i := range c.Ratios {
		row(fmt.Sprint(i+1), c.Runs[0][i], c.Runs[1][i], c.Ratios[i])
	}
	row("**median**", c.Median[0], c.Median[1], c.MedianRatio)
	if len(c.Ceiling) > 0 {
		b.WriteString("\n| ceiling | TPS | p50 ms | p99 ms | CPU µs/tx | vs " + bb + " median TPS |\n|---|---:|---:|---:|---:|---:|\n")
		for _, k := range sortedKeys(c.Ceiling) {
			r := c.Ceiling[k]
			ratio := 0.0
			if c.Median[1].TPS > 0 {
				ratio = r.TPS / c.Median[1].TPS
			}
			fmt.Fprintf(&b, "| %s | %s | %.3f | %.3f | %s | %s |\n", k, thousands(r.TPS), r.P50, r.P99, fmtCPU(r.CPUPerTx), fmtRatio(ratio))
		}
	}
	for _, o := range c.Overload {
		fmt.Fprintf(&b, "\nOverload (%s, open loop): offered %s/s (sent %s/s), answered %s/s = %.1f%% of the measured maximum %s/s (%s); p99 of answered %.3f ms from the schedule, %.3f ms from the actual send; %d timeouts; %d never sent by the generator (its send lag p99 %.3f ms); RSS %.1f → %.1f (halfway) → %.1f MiB",
			o.Label, thousands(o.OfferedPerSec), thousands(o.SentPerSec), thousands(o.AnsweredPerSec), o.GoodputPct, thousands(o.MaxTPS), o.MaxLabel, o.P99, o.ServiceP99, o.Timeouts, o.Unsent, o.SendLagP99, mib(o.RSSBefore), mib(o.RSSMid), mib(o.RSSAfter))
		if o.Sessions != nil {
			fmt.Fprintf(&b, " with %.0f → %.0f active sessions in the store", o.Sessions[0], o.Sessions[1])
		}
		b.WriteString("; drops:")
		if len(o.Dropped) == 0 {
			b.WriteString(" none")
		}
		for _, k := range sortedKeys(o.Dropped) {
			fmt.Fprintf(&b, " %s=%.0f", k, o.Dropped[k])
		}
		b.WriteString(".\n")
		if a := o.At1x; a != nil {
			fmt.Fprintf(&b, "Just before, the same open loop at 1× (%s, offered %s/s, sent %s/s): %s/s answered, CPU %s µs/tx, p99 %.3f ms; at 2× the answered rate is %.1f%% of that.\n",
				a.Label, thousands(a.OfferedPerSec), thousands(a.SentPerSec), thousands(a.AnsweredPerSec), fmtCPU(a.CPUPerTx), a.P99, a.GoodputPct)
		}
	}
	if r := c.RateBase; r != nil {
		fmt.Fprintf(&b, "\nThe offered rate derives from the maximum %s/s (%s, CPU %s µs/tx); the median answered rate, %s/s, is %.1f%% of it.\n",
			thousands(r.MaxTPS), r.Label, fmtCPU(r.CPUPerTx), thousands(r.AnsweredPerSec), r.GoodputPct)
	}
	b.WriteString("\n| target | value | met |\n|---|---|---|\n")
	for _, t := range c.Targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.Name, t.Value, met)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ReadReport reads a JSON report written by `run --json-out`.
func ReadReport(path string) (*Report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
