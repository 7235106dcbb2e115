package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/openaaa/openaaa/services/loadgen/internal/engine"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// A known run: 10 s, 4 sessions of auth + start + 2 interims + stop, latencies chosen so that
// every figure can be checked by hand.
func knownRun() (*engine.Config, *engine.Result) {
	cfg := &engine.Config{Mode: engine.ModeFlow, Auth: engine.PAP, Interims: 2, Concurrency: 4,
		Targets: []engine.Target{{Name: "dc1"}, {Name: "dc2"}}}
	res := &engine.Result{Elapsed: 10 * time.Second, Sent: 21, Answered: 20, Timeouts: 1, Accepts: 4,
		AcctResponses: 16, Sessions: 4, SessionsDone: 4, PerTarget: []uint64{11, 10}}
	for _, us := range []uint64{100, 200, 300, 400} { // auth: avg 0.25 ms
		res.Latency[engine.KindAuth].RecordMicros(us)
	}
	for i := uint64(1); i <= 16; i++ { // acct: 10..160 µs, avg 0.085 ms
		k := []engine.Kind{engine.KindStart, engine.KindInterim, engine.KindInterim, engine.KindStop}[i%4]
		res.Latency[k].RecordMicros(10 * i)
	}
	return cfg, res
}

func TestReportArithmetic(t *testing.T) {
	cfg, res := knownRun()
	r := New(cfg, res)
	if !near(r.IncomingTPS, 2) {
		t.Errorf("incoming TPS %v, want 20 answered / 10 s = 2", r.IncomingTPS)
	}
	if !near(r.AvgAuthMs, 0.25) || !near(r.AvgAcctMs, 0.085) {
		t.Errorf("avg auth %v acct %v, want 0.25 and 0.085", r.AvgAuthMs, r.AvgAcctMs)
	}
	all := r.Latency[KeyAll]
	// 20 samples: 10,20,...,160 and 100,200,300,400 → sorted the 10th is 100 µs, the 20th 400 µs.
	if all.Count != 20 || !near(all.P50, 0.1) || !near(all.P99, 0.4) || !near(all.Max, 0.4) {
		t.Errorf("all: %+v", all)
	}
	if acct := r.Latency[KeyAcct]; acct.Count != 16 || !near(acct.P50, 0.08) {
		t.Errorf("acct: %+v", acct)
	}
	if r.Latency["acct-interim"].Count != 8 {
		t.Errorf("interim count %d", r.Latency["acct-interim"].Count)
	}

	r.SetServers([]Process{{PID: 1, CPUSeconds: 0.5, RSSBefore: 10 << 20, RSSAfter: 12 << 20}, {PID: 2, CPUSeconds: 0.3}})
	if !near(*r.ServerCPUSeconds, 0.8) || !near(*r.CPUMicrosPerTx, 40000) {
		t.Errorf("CPU %v s, %v µs/tx; want 0.8 and 0.8e6/20 = 40000", *r.ServerCPUSeconds, *r.CPUMicrosPerTx)
	}
	r.SetMetrics(40, []float64{1, 3, 2}, 64, map[string]float64{"overload": 5}, nil)
	if !near(*r.OutgoingTPS, 4) || !near(*r.WorkersBusyAvg, 2) || *r.WorkersBusyMax != 3 {
		t.Errorf("outgoing %v busy %v/%v", *r.OutgoingTPS, *r.WorkersBusyAvg, *r.WorkersBusyMax)
	}

	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"incoming TPS", "2.0", "4.0", "2.0 (max 3 of 64)", "0.250", "0.085", "40000.0", "overload=5", "messages per target [11 10]"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !near(back.IncomingTPS, 2) || back.Latency[KeyAll].Count != 20 {
		t.Errorf("JSON round trip: %v %+v", err, back.Latency[KeyAll])
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 999.94: "999.9", 1234.56: "1,234.6", 1234567: "1,234,567.0", -1500: "-1,500.0"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

func mk(label string, tps, p50, p99, cpu float64) *Report {
	return &Report{Label: label, Mode: "flow", AuthMethod: "pap", Interims: 5, Concurrency: 16, Seconds: 20,
		Distribution: "round-robin", Targets: []string{"t1"}, IncomingTPS: tps, CPUMicrosPerTx: &cpu,
		Latency: map[string]Latency{KeyAll: {P50: p50, P99: p99}}}
}

func TestCompare(t *testing.T) {
	runs := []*Report{
		mk("freeradius", 10000, 1, 4, 80), mk("policing", 30000, 0.5, 2, 20),
		mk("freeradius", 12000, 1, 3, 70), mk("policing", 20000, 0.4, 3, 25),
		mk("freeradius", 11000, 2, 5, 90), mk("policing", 25000, 0.6, 1, 30),
	}
	ceiling := mk("policing-noop", 50000, 0.2, 1, 10)
	over := mk("policing-overload", 24000, 0.5, 2, 28)
	over.Seconds, over.Offered, over.Unsent = 10, 500000, 100
	over.Dropped = map[string]float64{"overload": 1000}
	over.Servers = []Process{{RSSBefore: 100 << 20, RSSAfter: 105 << 20}}
	c, err := Compare(runs, []*Report{ceiling}, []*Report{over})
	if err != nil {
		t.Fatal(err)
	}
	if c.Labels != [2]string{"freeradius", "policing"} {
		t.Fatalf("labels %v", c.Labels)
	}
	if m := c.Median[0]; m.TPS != 11000 || m.P50 != 1 || m.P99 != 4 || *m.CPUPerTx != 80 {
		t.Errorf("median A %+v", m)
	}
	if m := c.Median[1]; m.TPS != 25000 || m.P50 != 0.5 || m.P99 != 2 || *m.CPUPerTx != 25 {
		t.Errorf("median B %+v", m)
	}
	if r := c.MedianRatio; !near(r.TPS, 25000.0/11000) || !near(r.P99, 0.5) || !near(r.CPUPerTx, 25.0/80) {
		t.Errorf("median ratio %+v", r)
	}
	if r := c.Ratios[0]; !near(r.TPS, 3) || !near(r.P99, 0.5) || !near(r.CPUPerTx, 0.25) {
		t.Errorf("run 1 ratio %+v", r)
	}
	o := c.Overload[0]
	if !near(o.OfferedPerSec, 50000) || !near(o.GoodputPct, 96) || o.MaxTPS != 25000 {
		t.Errorf("overload %+v", o)
	}
	met := map[string]bool{}
	for _, tc := range c.Targets {
		met[tc.Name] = tc.Met
	}
	want := map[string]bool{"TPS ≥ 1.5× baseline": true, "p99 ≤ baseline": true, "server CPU ≤ 30 µs/transaction": true,
		"overload goodput ≥ 90% of max": true, "overload RSS flat (second half)": true}
	for k, v := range want {
		if met[k] != v {
			t.Errorf("target %q met=%v, want %v", k, met[k], v)
		}
	}
	var b bytes.Buffer
	if err := c.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| **median** | 11,000.0 | 1.000 | 4.000 | 80.0 | 25,000.0 | 0.500 | 2.000 | 25.0 | 2.27× | 0.50× | 0.31× |", "policing-noop", "96.0%", "overload=1000"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("markdown lacks %q:\n%s", s, b.String())
		}
	}
	if _, err := Compare(append(runs, mk("third", 1, 1, 1, 1)), nil, nil); err == nil {
		t.Error("three labels accepted")
	}
}

func TestMedian(t *testing.T) {
	if Median([]float64{3, 1, 2}) != 2 || Median([]float64{4, 1, 3, 2}) != 2.5 || Median(nil) != 0 {
		t.Fatal("median")
	}
}

func TestOverloadRSSFlatUsesSecondHalf(t *testing.T) {
	runs := []*Report{mk("a", 100, 1, 1, 1), mk("b", 200, 1, 1, 1)}
	grow := mk("b-overload", 180, 1, 1, 1)
	grow.Servers = []Process{{RSSBefore: 50 << 20, RSSMid: 100 << 20, RSSAfter: 200 << 20}}
	settled := mk("b-overload", 180, 1, 1, 1)
	settled.Servers = []Process{{RSSBefore: 50 << 20, RSSMid: 150 << 20, RSSAfter: 155 << 20}}
	for _, tc := range []struct {
		r    *Report
		flat bool
	}{{grow, false}, {settled, true}} {
		c, err := Compare(runs, nil, []*Report{tc.r})
		if err != nil {
			t.Fatal(err)
		}
		for _, chk := range c.Targets {
			if strings.HasPrefix(chk.Name, "overload RSS flat") && chk.Met != tc.flat {
				t.Errorf("%s: met=%v, want %v", chk.Value, chk.Met, tc.flat)
			}
		}
		if g := c.Overload[0].GoodputPct; !near(g, 90) {
			t.Errorf("goodput %v, want 90", g)
		}
	}
}

func TestSetOverloadMax(t *testing.T) {
	over := mk("overload", 9000, 1, 1, 1)
	c, err := Compare([]*Report{mk("a", 100, 1, 1, 1), mk("b", 20000, 1, 1, 1)}, nil, []*Report{over})
	if err != nil {
		t.Fatal(err)
	}
	if g := c.Overload[0].GoodputPct; !near(g, 45) {
		t.Fatalf("goodput vs the median %v, want 45", g)
	}
	if err := c.SetOverloadMax(mk("pinned", 10000, 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if o := c.Overload[0]; !near(o.GoodputPct, 90) || o.MaxLabel != "pinned" {
		t.Fatalf("goodput vs the pinned maximum: %+v", o)
	}
	for _, chk := range c.Targets {
		if strings.HasPrefix(chk.Name, "overload goodput") && !chk.Met {
			t.Errorf("90%% not met: %+v", chk)
		}
	}
}

// Rounds: each overload run against the maximum measured just before it; the target on the
// median goodput; RSS flat in every round; the rate base reported beside.
func TestOverloadRounds(t *testing.T) {
	var over, maxes []*Report
	for i, x := range [][2]float64{{9000, 10000}, {8000, 10000}, {9600, 10000}} {
		o := mk("overload", x[0], 1, 1, 1)
		o.Servers = []Process{{RSSBefore: 100 << 20, RSSMid: 100 << 20, RSSAfter: 101 << 20}}
		if i == 2 {
			o.Servers[0].RSSAfter = 200 << 20 // grew
		}
		over = append(over, o)
		maxes = append(maxes, mk(fmt.Sprintf("max-%d", i+1), x[1], 1, 1, 1))
	}
	c, err := Compare([]*Report{mk("a", 100, 1, 1, 1), mk("b", 20000, 1, 1, 1)}, nil, over)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetOverloadMax(maxes[:2]...); err == nil {
		t.Fatal("2 maxima for 3 runs accepted")
	}
	if err := c.SetOverloadMax(maxes...); err != nil {
		t.Fatal(err)
	}
	if o := c.Overload[1]; !near(o.GoodputPct, 80) || o.MaxLabel != "max-2" {
		t.Fatalf("round 2: %+v", o)
	}
	c.SetRateBase(mk("fresh", 12000, 1, 1, 1))
	if b := c.RateBase; !near(b.AnsweredPerSec, 9000) || !near(b.GoodputPct, 75) {
		t.Fatalf("rate base %+v", b)
	}
	met := map[string]TargetCheck{}
	for _, chk := range c.Targets {
		met[chk.Name] = chk
	}
	if g := met["overload goodput ≥ 90% of max"]; !g.Met || !strings.Contains(g.Value, "90.0% (median of 3 rounds: 90.0, 80.0, 96.0)") {
		t.Errorf("goodput check %+v", g)
	}
	if r := met["overload RSS flat (second half)"]; r.Met {
		t.Errorf("RSS grew in round 3, yet flat: %+v", r)
	}
	// The same open loop at 1× before each round: 2× answered against it.
	var at1x []*Report
	for _, a := range []float64{10000, 8000, 12000} {
		at1x = append(at1x, mk("overload-1x", a, 1, 1, 1))
	}
	if err := c.SetAt1x(at1x[:1]...); err == nil {
		t.Fatal("1 run at 1× for 3 accepted")
	}
	if err := c.SetAt1x(at1x...); err != nil {
		t.Fatal(err)
	}
	if a := c.Overload[1].At1x; a == nil || !near(a.GoodputPct, 100) || !near(a.AnsweredPerSec, 8000) {
		t.Fatalf("round 2 at 1×: %+v", a)
	}
	met = map[string]TargetCheck{}
	for _, chk := range c.Targets {
		met[chk.Name] = chk
	}
	if g := met["overload goodput ≥ 90% of the open loop at 1× (same workload)"]; !g.Met || !strings.Contains(g.Value, "90.0% (median of 3 rounds: 90.0, 100.0, 80.0)") {
		t.Errorf("1× goodput check %+v", g)
	}
	var b bytes.Buffer
	if err := c.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"maximum 12,000.0/s (fresh", "75.0% of it", "at 1× (overload-1x", "8,000.0/s answered", "100.0% of that"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
}

// TestTargetReports: each target's share from the engine's per-target results, its servers'
// figures, the text table and the compact summary.
func TestTargetReports(t *testing.T) {
	cfg, res := knownRun()
	res.Targets = make([]engine.TargetResult, 2)
	for _, us := range []uint64{100, 300} { // dc1: two auths, avg 0.2 ms
		res.Targets[0].Auth.RecordMicros(us)
	}
	for i := uint64(1); i <= 8; i++ { // dc2: acct 1..8 ms, p99 8 ms
		res.Targets[1].Acct.RecordMicros(1000 * i)
	}
	res.Targets[0].Answered, res.Targets[0].Accepts = 2, 2
	res.Targets[1].Answered, res.Targets[1].Timeouts = 8, 1
	r := New(cfg, res)
	if len(r.TargetReports) != 2 {
		t.Fatalf("%d target reports", len(r.TargetReports))
	}
	d1, d2 := r.TargetReports[0], r.TargetReports[1]
	if d1.Name != "dc1" || !near(d1.IncomingTPS, 0.2) || !near(d1.AvgAuthMs, 0.2) || d1.AvgAcctMs != 0 || d1.Sent != 11 || d1.Accepts != 2 {
		t.Errorf("dc1: %+v", d1)
	}
	if d2.Name != "dc2" || !near(d2.IncomingTPS, 0.8) || !near(d2.AvgAcctMs, 4.5) || !near(d2.P99Ms, 8) || d2.Timeouts != 1 || d2.Sent != 10 {
		t.Errorf("dc2: %+v", d2)
	}
	r.SetTargetMetrics(1, 30, []float64{2, 4}, 64)
	r.SetTargetMetrics(5, 1, nil, 0) // no such target: ignored
	if d2 := r.TargetReports[1]; d2.OutgoingTPS == nil || !near(*d2.OutgoingTPS, 3) || !near(*d2.WorkersBusyAvg, 3) || *d2.Workers != 64 || r.TargetReports[0].OutgoingTPS != nil {
		t.Errorf("dc2 server figures: %+v", d2)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "target") || !strings.Contains(text.String(), "8.000") {
		t.Errorf("text report lacks the per-target table:\n%s", text.String())
	}
	r.Dropped = map[string]float64{"unknown_client": 3553, "overload": 0}
	s := r.Summary()
	if len(s.Dropped) != 1 || s.Dropped["unknown_client"] != 3553 {
		t.Errorf("summary drops: %v (the operator shows them in an AAALoadTest's status)", s.Dropped)
	}
	if len(s.Targets) != 2 || s.Targets[1].Name != "dc2" || !near(*s.Targets[1].OutgoingTPS, 3) || s.Targets[1].Timeouts != 1 ||
		!near(s.IncomingTPS, 2) || s.Sessions != 4 || !near(s.P99Ms, r.Latency[KeyAll].P99) {
		t.Errorf("summary: %+v", s)
	}
}

// The timeline's seconds with a failed request are the NAS-visible gap; the acknowledged
// records go to their own file, not the JSON.
func TestTimelineGapAndAcked(t *testing.T) {
	cfg, res := knownRun()
	cfg.Failover, cfg.HoldDown = true, 5*time.Second
	res.Timeline = []engine.Second{{Answered: 5}, {Answered: 3, Failed: 1, Retransmissions: 2}, {Answered: 6}, {Failed: 2}}
	res.Acked = []engine.AckedSession{{ID: "a1", Starts: 1, Interims: 2, Stops: 1}, {ID: "b2", Starts: 1}}
	r := New(cfg, res)
	if fmt.Sprint(r.GapSeconds) != "[1 3]" || len(r.Timeline) != 4 || r.Timeline[1] != (Second{3, 1, 2}) {
		t.Errorf("gap %v timeline %+v", r.GapSeconds, r.Timeline)
	}
	if r.FailoverHoldDownSeconds != 5 {
		t.Errorf("hold-down %v", r.FailoverHoldDownSeconds)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "NAS-visible gap: 2 s") {
		t.Errorf("text report: %v\n%s", err, text.String())
	}
	var acked, js bytes.Buffer
	if err := r.WriteAcked(&acked); err != nil || acked.String() != "a1 1 2 1\nb2 1 0 0\n" {
		t.Errorf("acked file %q (%v)", acked.String(), err)
	}
	if err := r.WriteJSON(&js); err != nil || strings.Contains(js.String(), "a1") || !strings.Contains(js.String(), `"nasVisibleGapSeconds": [`) {
		t.Errorf("JSON: %v\n%s", err, js.String())
	}
	// No failure: an empty gap, not a missing one.
	_, res = knownRun()
	if r := New(cfg, res); r.GapSeconds == nil || len(r.GapSeconds) != 0 {
		t.Errorf("gap %v without failures", r.GapSeconds)
	}
}
