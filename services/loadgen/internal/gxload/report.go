package gxload

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Report is a run's figures in the shape of the RADIUS report: TPS, average and p99 per
// command, timeouts, and the servers' CPU per transaction when their PIDs were given.
type Report struct {
	Label   string  `json:"label,omitempty"`
	Seconds float64 `json:"seconds"`
	// TPS is Gx requests answered per second (every command).
	TPS               float64 `json:"tps"`
	Sessions          uint64  `json:"sessions"`
	SessionsCompleted uint64  `json:"sessionsCompleted"`
	Skipped           uint64  `json:"skipped,omitempty"`
	RARs              uint64  `json:"rarsAnswered"`
	Failovers         uint64  `json:"failovers"`
	Unconfirmed       uint64  `json:"unconfirmed"`
	Abandoned         uint64  `json:"abandoned"`
	Commands          []Line  `json:"commands"`
	Total             Line    `json:"total"`
	Targets           []Line  `json:"targets"`
	// ServerCPUMicrosPerTx is the CPU the --server-pid processes used per answered request.
	ServerCPUMicrosPerTx *float64 `json:"serverCpuMicrosPerTx,omitempty"`
	ServerCPUSeconds     *float64 `json:"serverCpuSeconds,omitempty"`
	LoadgenCPUSeconds    float64  `json:"loadgenCpuSeconds"`
}

// Line is one row: a command, a target or the total.
type Line struct {
	Name     string            `json:"name"`
	Sent     uint64            `json:"sent"`
	Answered uint64            `json:"answered"`
	TPS      float64           `json:"tps"`
	AvgMs    float64           `json:"avgMs"`
	P99Ms    float64           `json:"p99Ms"`
	Timeouts uint64            `json:"timeouts"`
	Errors   uint64            `json:"errors"`
	Codes    map[string]uint64 `json:"resultCodes,omitempty"`
}

func line(name string, s *Stats, secs float64) Line {
	l := Line{Name: name, Sent: s.Sent, Answered: s.Answered, Timeouts: s.Timeouts, Errors: s.Errors}
	if secs > 0 {
		l.TPS = float64(s.Answered) / secs
	}
	if s.Latency.Count() > 0 {
		l.AvgMs = s.Latency.Mean()
		l.P99Ms = s.Latency.Quantile(0.99)
	}
	for code, n := range s.Codes {
		if l.Codes == nil {
			l.Codes = map[string]uint64{}
		}
		l.Codes[strconv.FormatUint(uint64(code), 10)] = n
	}
	return l
}

// NewReport turns a result into its report; serverCPU < 0 means not measured.
func NewReport(cfg *Config, res *Result, serverCPU, loadgenCPU float64) *Report {
	secs := res.Elapsed.Seconds()
	r := &Report{Seconds: secs, Sessions: res.Sessions, SessionsCompleted: res.SessionsCompleted,
		Skipped: res.Skipped, RARs: res.RARs, Failovers: res.Failovers, Unconfirmed: res.Unconfirmed, Abandoned: res.Abandoned, LoadgenCPUSeconds: loadgenCPU}
	for i := range res.ByCommand {
		r.Commands = append(r.Commands, line(Command(i).String(), &res.ByCommand[i], secs))
	}
	total := res.Total()
	r.Total = line("total", &total, secs)
	r.TPS = r.Total.TPS
	for i := range res.ByTarget {
		r.Targets = append(r.Targets, line(cfg.Targets[i], &res.ByTarget[i], secs))
	}
	if serverCPU >= 0 {
		r.ServerCPUSeconds = &serverCPU
		if total.Answered > 0 {
			us := serverCPU * 1e6 / float64(total.Answered)
			r.ServerCPUMicrosPerTx = &us
		}
	}
	return r
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// WriteText writes the report as a table.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tsent\tanswered\tTPS\tavg ms\tp99 ms\ttimeouts\terrors\tresult codes\t\n")
	row := func(l Line) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.3f\t%.3f\t%d\t%d\t%s\t\n", l.Name, l.Sent, l.Answered, l.TPS, l.AvgMs, l.P99Ms,
			l.Timeouts, l.Errors, codes(l.Codes))
	}
	for _, l := range r.Commands {
		row(l)
	}
	row(r.Total)
	if len(r.Targets) > 1 {
		for _, l := range r.Targets {
			row(l)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	cpu := "not measured (--server-pid)"
	if r.ServerCPUMicrosPerTx != nil {
		cpu = fmt.Sprintf("%.1f µs per Gx request", *r.ServerCPUMicrosPerTx)
	}
	_, err := fmt.Fprintf(w, "%.1f s, %d sessions (%d completed, %d skipped, %d unconfirmed, %d abandoned), %d failovers, %d RARs answered; server CPU: %s; generator CPU %.1f s\n",
		r.Seconds, r.Sessions, r.SessionsCompleted, r.Skipped, r.Unconfirmed, r.Abandoned, r.Failovers, r.RARs, cpu, r.LoadgenCPUSeconds)
	return err
}

func codes(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
