// Command aaa-loadgen is OpenAAA's traffic generator: it plays the field's capacity-test flow
// (Access-Request → Accounting-Start → N × Interim-Update → Stop) against one or more RADIUS
// servers, or a PCEF's Gx sessions (CCR-I → N × CCR-U → CCR-T) against policy servers, closed
// or open loop, and prints the capacity report.
//
//	aaa-loadgen run [flags]           one bounded RADIUS run, report on stdout
//	aaa-loadgen gx [flags]            one bounded Gx run, report on stdout
//	aaa-loadgen subscribers [flags]   write the matching policing and FreeRADIUS subscriber files
//	aaa-loadgen compare [flags] FILE… side-by-side A/B table from the JSON reports of `run`
//	aaa-loadgen version
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openaaa/openaaa/internal/version"
	"github.com/openaaa/openaaa/services/loadgen/internal/engine"
	"github.com/openaaa/openaaa/services/loadgen/internal/population"
	"github.com/openaaa/openaaa/services/loadgen/internal/procstat"
	"github.com/openaaa/openaaa/services/loadgen/internal/report"
	"github.com/openaaa/openaaa/services/loadgen/internal/scrape"
	"github.com/openaaa/openaaa/services/loadgen/internal/tick"
	"github.com/openaaa/openaaa/services/loadgen/summary"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `aaa-loadgen: RADIUS and Gx traffic generator and capacity report.

  aaa-loadgen run [flags]            one bounded RADIUS run against --target servers (see run -h)
  aaa-loadgen gx [flags]             one bounded Gx run against --target policy servers (see gx -h)
  aaa-loadgen subscribers [flags]    write the subscriber files for policing and FreeRADIUS
  aaa-loadgen compare [flags] FILE…  A/B table from JSON reports (see compare -h)
  aaa-loadgen summary [--median-tps] FILE…  one line per JSON report (or their median TPS)
  aaa-loadgen version
`

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = cmdRun(args[1:], stdout, stderr)
	case "gx":
		err = cmdGx(args[1:], stdout, stderr)
	case "subscribers":
		err = cmdSubscribers(args[1:], stdout, stderr)
	case "compare":
		err = cmdCompare(args[1:], stdout, stderr)
	case "summary":
		err = cmdSummary(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "aaa-loadgen", version.Version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "aaa-loadgen: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "aaa-loadgen:", err)
		return 1
	}
	return 0
}

// listFlag collects repeatable, comma-separated values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

type popFlags struct {
	users     int
	userPat   string
	passPat   string
	framedIP  string
	usersFile string
	interval  uint
}

func (p *popFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&p.users, "users", 10000, "number of subscribers made from the patterns")
	fs.StringVar(&p.userPat, "user-pattern", "user%05d", "user name pattern (printf, 1-based index)")
	fs.StringVar(&p.passPat, "password-pattern", "pass%05d", "password pattern (printf, 1-based index)")
	fs.StringVar(&p.framedIP, "framed-ip-base", "10.0.0.1", "Framed-IP-Address of the first subscriber, the next ones follow (none: no address)")
	fs.StringVar(&p.usersFile, "users-file", "", "read subscribers from a file instead: a policing subscriber file (.yaml) or lines of \"user password [framed-ip]\"")
	fs.UintVar(&p.interval, "interim-interval", 300, "Acct-Interim-Interval of the subscribers' profile (s); also the Acct-Session-Time step")
}

func (p *popFlags) load() (*population.Population, error) {
	var pop *population.Population
	var err error
	if p.usersFile != "" {
		pop, err = population.Load(p.usersFile)
	} else {
		pop, err = population.Pattern(p.users, p.userPat, p.passPat, p.framedIP)
	}
	if err != nil {
		return nil, err
	}
	pop.AcctInterimInterval = uint32(p.interval)
	return pop, nil
}

// parseTarget accepts [name=]host:port (accounting on port+1) or [name=]host:authport/acctport.
// outFlags say where run and gx put their report: stdout, as the table or JSON, and files.
type outFlags struct {
	asJSON, quiet           bool
	jsonOut, textOut, label string
}

func (o *outFlags) register(fs *flag.FlagSet, labelUsage string) {
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON instead of the table")
	fs.StringVar(&o.jsonOut, "json-out", "", "also write the JSON report to this file")
	fs.StringVar(&o.textOut, "text-out", "", "also write the table to this file")
	fs.StringVar(&o.label, "label", "", labelUsage)
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line")
}

// tableReport is a report of run or gx: a table and JSON.
type tableReport interface {
	WriteJSON(io.Writer) error
	WriteText(io.Writer) error
}

// write writes rep to the files asked for, then the files of more, then to stdout.
func (o *outFlags) write(stdout io.Writer, rep tableReport, more ...outFile) error {
	files := append([]outFile{{o.jsonOut, rep.WriteJSON}, {o.textOut, rep.WriteText}}, more...)
	if err := writeFiles(files...); err != nil {
		return err
	}
	if o.asJSON {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteText(stdout)
}

func parseTarget(s string, i int) (engine.Target, error) {
	t := engine.Target{Name: fmt.Sprintf("t%d", i+1)}
	if n, rest, ok := strings.Cut(s, "="); ok {
		t.Name, s = n, rest
	}
	hostPort, acctPort, hasAcct := strings.Cut(s, "/")
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return t, fmt.Errorf("--target %q: want [name=]host:port[/acctport]", s)
	}
	pn, err := strconv.Atoi(port)
	if err != nil || pn < 1 || pn > 65534 {
		return t, fmt.Errorf("--target %q: bad port", s)
	}
	t.Auth = net.JoinHostPort(host, port)
	if hasAcct {
		if an, err := strconv.Atoi(acctPort); err != nil || an < 1 || an > 65535 {
			return t, fmt.Errorf("--target %q: bad accounting port", s)
		}
		t.Acct = net.JoinHostPort(host, acctPort)
	} else {
		t.Acct = net.JoinHostPort(host, strconv.Itoa(pn+1))
	}
	return t, nil
}

func cmdRun(args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		targets, metricsURLs, pids  listFlag
		secret, secretFile          string
		mode, authMethod, dist      string
		interims, concurrency       int
		rate                        float64
		duration, ramp, timeout     time.Duration
		count, sessions, seed       uint64
		retries                     int
		requireMA                   bool
		nasIP, nasID                string
		out                         outFlags
		summaryFile                 string
		metricsBestEffort, failover bool
		holdDown                    time.Duration
		ackedOut                    string
		pf                          popFlags
	)
	fs.Var(&targets, "target", "server [name=]host:authport[/acctport] (accounting port defaults to authport+1); repeat or comma-separate for several DCs")
	fs.StringVar(&secret, "secret", "testing123", "shared secret")
	fs.StringVar(&secretFile, "secret-file", "", "read the shared secret from a file (trailing newlines ignored)")
	fs.StringVar(&mode, "mode", "flow", "flow (auth → start → interims → stop), auth (Access-Request only) or acct (accounting only)")
	fs.StringVar(&authMethod, "auth", "pap", "pap, chap, eap-tls or peap-mschapv2 (an EAP conversation per authentication, closed loop; see --eap-*)")
	var ef eapFlags
	ef.register(fs)
	fs.IntVar(&interims, "interims", 5, "Interim-Updates per session")
	fs.StringVar(&dist, "distribution", "round-robin", "round-robin (each message of a session to the next target) or sticky (a session stays on one target)")
	fs.IntVar(&concurrency, "concurrency", 16, "workers: requests in flight (closed loop) or most sessions in progress (open loop)")
	fs.Float64Var(&rate, "rate", 0, "open loop: offered messages per second (0: closed loop)")
	fs.DurationVar(&duration, "duration", 10*time.Second, "run length bound (at most 1h)")
	fs.Uint64Var(&count, "count", 50_000_000, "message count bound")
	fs.Uint64Var(&sessions, "sessions", 0, "session count bound (0: none); e.g. 300 for a demo")
	fs.DurationVar(&ramp, "ramp", 0, "ramp-up: start workers (closed loop) or raise the rate (open loop) linearly over this time")
	fs.DurationVar(&timeout, "timeout", time.Second, "reply timeout before a retransmission")
	fs.IntVar(&retries, "retries", 2, "retransmissions before a request counts as timed out")
	fs.BoolVar(&failover, "failover", false, "closed loop: as a NAS with several servers, a retransmission goes to the next target and a target that timed out is skipped for --hold-down, then probed")
	fs.DurationVar(&holdDown, "hold-down", 10*time.Second, "with --failover: how long a target that timed out is skipped before one request probes it")
	fs.StringVar(&ackedOut, "acked-out", "", "closed loop: write the accounting records answered, per session (\"Acct-Session-Id starts interims stops\"), to this file")
	fs.BoolVar(&requireMA, "require-reply-ma", false, "replies must carry Message-Authenticator (always verified when present)")
	fs.StringVar(&nasIP, "nas-ip", "127.0.0.1", "NAS-IP-Address sent")
	fs.StringVar(&nasID, "nas-id", "aaa-loadgen", "NAS-Identifier sent (empty: none)")
	fs.Var(&metricsURLs, "metrics", "[target=]server admin address or /metrics URL to read outgoing TPS, busy workers and drops from (with target=, also that target's own figures); repeatable")
	fs.BoolVar(&metricsBestEffort, "metrics-best-effort", false, "a --metrics page that cannot be read before the run is left out (with a warning) instead of failing the run, and a failed sample is skipped")
	fs.StringVar(&summaryFile, "summary-file", "", "also write a compact JSON summary (at most 4096 bytes, per target and in total) to this file, e.g. /dev/termination-log; on failure it holds the error")
	fs.Var(&pids, "server-pid", "PID of a server process to charge CPU and RSS to; repeatable")
	out.register(fs, "label of the run in the report (compare groups runs by label)")
	fs.Uint64Var(&seed, "seed", 0, "seed of the counters' growth (0: random)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the load generator to this file")
	pf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if summaryFile != "" {
		// A run that cannot take place still says why where the summary is expected.
		defer func() {
			if err != nil {
				if werr := writeSummary(summaryFile, summary.Summary{Error: err.Error()}); werr != nil {
					err = errors.Join(err, werr)
				}
			}
		}()
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("run: unexpected argument %q", fs.Arg(0))
	}
	if len(targets) == 0 {
		return errors.New("run: --target is required")
	}
	if duration <= 0 || duration > time.Hour {
		return errors.New("run: --duration must be in (0, 1h]")
	}
	cfg := engine.Config{
		Interims: interims, Concurrency: concurrency, Rate: rate, Duration: duration,
		MaxMessages: count, MaxSessions: sessions, Ramp: ramp, Timeout: timeout, Retries: retries,
		RequireReplyMA: requireMA, NASIdentifier: nasID, Seed: seed,
		Failover: failover, HoldDown: holdDown, TrackAcked: ackedOut != "",
	}
	for i, s := range targets {
		t, err := parseTarget(s, i)
		if err != nil {
			return err
		}
		cfg.Targets = append(cfg.Targets, t)
	}
	if cfg.Mode, err = engine.ParseMode(mode); err != nil {
		return err
	}
	switch authMethod {
	case "pap":
		cfg.Auth = engine.PAP
	case "chap":
		cfg.Auth = engine.CHAP
	case "eap-tls":
		cfg.Auth = engine.EAPTLS
	case "peap-mschapv2":
		cfg.Auth = engine.PEAPMSCHAPv2
	default:
		return fmt.Errorf("--auth %q: want pap, chap, eap-tls or peap-mschapv2", authMethod)
	}
	if cfg.Auth.IsEAP() {
		if cfg.EAPTLS, err = ef.tlsConfig(cfg.Auth == engine.EAPTLS); err != nil {
			return err
		}
	}
	switch dist {
	case "round-robin", "rr":
		cfg.Distribution = engine.RoundRobin
	case "sticky":
		cfg.Distribution = engine.Sticky
	default:
		return fmt.Errorf("--distribution %q: want round-robin or sticky", dist)
	}
	if secretFile != "" {
		raw, err := os.ReadFile(secretFile)
		if err != nil {
			return err
		}
		secret = strings.TrimRight(string(raw), "\r\n")
	}
	if secret == "" {
		return errors.New("empty shared secret")
	}
	cfg.Secret = []byte(secret)
	ip, err := netipv4(nasIP)
	if err != nil {
		return fmt.Errorf("--nas-ip: %w", err)
	}
	cfg.NASIP = ip
	if cfg.Population, err = pf.load(); err != nil {
		return err
	}
	pidList, err := parsePIDs(pids)
	if err != nil {
		return err
	}
	if !out.quiet {
		cfg.Progress = func(p engine.Progress) {
			fmt.Fprintf(stderr, "aaa-loadgen: %5.1fs  %8.0f/s  sent %d  answered %d  timeouts %d  errors %d\n",
				p.Elapsed.Seconds(), p.Rate, p.Sent, p.Answered, p.Timeouts, p.Errors)
		}
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	sources, err := parseMetricsSources(metricsURLs, cfg.Targets)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := measure(ctx, &cfg, sources, metricsBestEffort, pidList, stderr)
	if err != nil {
		return err
	}
	rep.Label = out.label
	if summaryFile != "" {
		if err := writeSummary(summaryFile, rep.Summary()); err != nil {
			return err
		}
	}
	return out.write(stdout, rep, outFile{ackedOut, rep.WriteAcked})
}

// parsePIDs reads the --server-pid values.
func parsePIDs(values []string) ([]int, error) {
	var pids []int
	for _, p := range values {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--server-pid %q: not a PID", p)
		}
		pids = append(pids, n)
	}
	return pids, nil
}

// outFile is a file a command writes when asked to: path empty, it is not.
type outFile struct {
	path  string
	write func(io.Writer) error
}

// writeFiles writes the files asked for, in order, and stops at the first error.
func writeFiles(files ...outFile) error {
	for _, f := range files {
		if f.path == "" {
			continue
		}
		if err := population.WriteFile(f.path, f.write); err != nil {
			return err
		}
	}
	return nil
}

func netipv4(s string) ([4]byte, error) {
	ip := net.ParseIP(s).To4()
	if ip == nil {
		return [4]byte{}, fmt.Errorf("%q is not an IPv4 address", s)
	}
	return [4]byte(ip), nil
}

// writeSummary writes the compact summary to path: a plain write, because the usual target,
// a container's /dev/termination-log, is a file the kubelet mounted and cannot be replaced.
func writeSummary(path string, s summary.Summary) error {
	b, err := summary.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// metricsSource is one /metrics page and the target (index in Config.Targets; -1: none)
// whose servers it belongs to.
type metricsSource struct {
	target int
	url    string
}

// parseMetricsSources reads --metrics values: [target=]address-or-URL. A target name must be
// one of the --target names.
func parseMetricsSources(values []string, targets []engine.Target) ([]metricsSource, error) {
	var out []metricsSource
	for _, v := range values {
		src := metricsSource{target: -1, url: v}
		if name, rest, ok := strings.Cut(v, "="); ok && !strings.ContainsAny(name, ":/") {
			src.url = rest
			for i, t := range targets {
				if t.Name == name {
					src.target = i
				}
			}
			if src.target < 0 {
				return nil, fmt.Errorf("--metrics %q: no --target named %q", v, name)
			}
		}
		src.url = scrape.URL(src.url)
		out = append(out, src)
	}
	return out, nil
}

// measure runs cfg and adds what the servers say: /metrics before, during (busy workers,
// sampled every 500 ms) and after, and CPU/RSS of the given PIDs.
func measure(ctx context.Context, cfg *engine.Config, sources []metricsSource, bestEffort bool, pids []int, stderr io.Writer) (*report.Report, error) {
	hc := &http.Client{Timeout: 2 * time.Second}
	if bestEffort {
		// A page that cannot be read now (e.g. a pod gone since the addresses were chosen)
		// would only fail the run: leave it out.
		var ok []metricsSource
		for _, src := range sources {
			if _, err := scrape.Fetch(ctx, hc, src.url); err != nil {
				fmt.Fprintf(stderr, "aaa-loadgen: leaving out %s: %v\n", src.url, err)
				continue
			}
			ok = append(ok, src)
		}
		sources = ok
	}
	fetchAll := func() ([]*scrape.Snapshot, error) {
		var out []*scrape.Snapshot
		for _, src := range sources {
			s, err := scrape.Fetch(ctx, hc, src.url)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	before, err := fetchAll()
	if err != nil {
		return nil, fmt.Errorf("metrics before the run: %w", err)
	}
	procBefore := make([]procstat.Sample, len(pids))
	for i, p := range pids {
		if procBefore[i], err = procstat.Read(p); err != nil {
			return nil, fmt.Errorf("server pid %d: %w", p, err)
		}
	}
	selfBefore, _ := procstat.Read(0)

	var busy []float64
	targetBusy := make([][]float64, len(cfg.Targets)) // per target: samples summed over its sources
	var mu sync.Mutex
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// RSS of the servers every 500 ms: "flat" is judged on the second half of the run, after
	// caches (duplicate detection, the store) have filled.
	rss := make([][]int64, len(pids))
	if len(pids) > 0 {
		wg.Go(func() {
			tick.Every(sampleCtx, 500*time.Millisecond, func(time.Time) bool {
				mu.Lock()
				for i, p := range pids {
					if s, err := procstat.Read(p); err == nil {
						rss[i] = append(rss[i], s.RSSBytes)
					}
				}
				mu.Unlock()
				return true
			})
		})
	}
	if len(sources) > 0 {
		wg.Go(func() {
			tick.Every(sampleCtx, 500*time.Millisecond, func(time.Time) bool {
				var sum float64
				perTarget := make([]float64, len(cfg.Targets))
				for _, src := range sources {
					s, err := scrape.Fetch(sampleCtx, hc, src.url)
					if err != nil {
						// Best effort skips this sample; otherwise sampling stops.
						return bestEffort && sampleCtx.Err() == nil
					}
					sum += s.WorkersBusy
					if src.target >= 0 {
						perTarget[src.target] += s.WorkersBusy
					}
				}
				mu.Lock()
				busy = append(busy, sum)
				for i, v := range perTarget {
					targetBusy[i] = append(targetBusy[i], v)
				}
				mu.Unlock()
				return true
			})
		})
	}
	res, err := engine.Run(ctx, *cfg)
	stopSampling()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	rep := report.New(cfg, res)
	selfAfter, _ := procstat.Read(0)
	rep.LoadgenCPUSeconds = selfAfter.CPUSeconds - selfBefore.CPUSeconds
	var procs []report.Process
	for i, p := range pids {
		after, err := procstat.Read(p)
		if err != nil {
			fmt.Fprintf(stderr, "aaa-loadgen: server pid %d after the run: %v\n", p, err)
			continue
		}
		pr := report.Process{PID: p, CPUSeconds: after.CPUSeconds - procBefore[i].CPUSeconds, RSSBefore: procBefore[i].RSSBytes, RSSAfter: after.RSSBytes}
		if n := len(rss[i]); n > 0 {
			pr.RSSMid = rss[i][n/2]
			for _, v := range rss[i] {
				pr.RSSMax = max(pr.RSSMax, v)
			}
		}
		procs = append(procs, pr)
	}
	rep.SetServers(procs)
	if len(sources) > 0 {
		after, err := fetchAll()
		if err != nil {
			fmt.Fprintf(stderr, "aaa-loadgen: metrics after the run: %v\n", err)
		} else {
			var tx, workers float64
			var sessions [2]float64
			dropped, requests := map[string]float64{}, map[string]float64{}
			targetTx := make([]float64, len(cfg.Targets))
			targetWorkers := make([]float64, len(cfg.Targets))
			hasTarget := make([]bool, len(cfg.Targets))
			for i := range after {
				d := after[i].Transactions - before[i].Transactions
				tx += d
				workers += after[i].Workers
				if t := sources[i].target; t >= 0 {
					targetTx[t] += d
					targetWorkers[t] += after[i].Workers
					hasTarget[t] = true
				}
				sessions[0] += before[i].Sessions
				sessions[1] += after[i].Sessions
				for k, v := range scrape.Delta(before[i].Dropped, after[i].Dropped) {
					dropped[k] += v
				}
				for k, v := range scrape.Delta(before[i].Requests, after[i].Requests) {
					requests[k] += v
				}
			}
			rep.SetMetrics(tx, busy, workers, dropped, requests)
			rep.SessionsActive = &sessions
			for t, ok := range hasTarget {
				if ok {
					rep.SetTargetMetrics(t, targetTx[t], targetBusy[t], targetWorkers[t])
				}
			}
		}
	}
	return rep, nil
}

func cmdSubscribers(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("subscribers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var pf popFlags
	var policing, freeradius string
	var sessionTimeout uint
	pf.register(fs)
	fs.StringVar(&policing, "policing", "", "write the policing subscriber file (YAML) here")
	fs.StringVar(&freeradius, "freeradius", "", "write the FreeRADIUS `users` file (rlm_files) here")
	fs.UintVar(&sessionTimeout, "session-timeout", 3600, "Session-Timeout of the profile (s)")
	gx := population.GxSubscribers{MonitoringKey: "mk1", QuotaOctets: 1 << 50, GrantOctets: 1 << 30}
	fs.IntVar(&gx.Count, "gx-subscribers", 0, "also write this many Gx subscribers (policing file only), named by IMSI from --imsi-base, for `aaa-loadgen gx`")
	fs.Uint64Var(&gx.IMSIBase, "imsi-base", defaultIMSIBase, "first IMSI of the Gx subscribers")
	fs.StringVar(&gx.MonitoringKey, "monitoring-key", gx.MonitoringKey, "Monitoring-Key of the Gx subscribers' usage quota")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if policing == "" && freeradius == "" {
		return errors.New("subscribers: give --policing FILE and/or --freeradius FILE")
	}
	pop, err := pf.load()
	if err != nil {
		return err
	}
	pop.SessionTimeout = uint32(sessionTimeout)
	if gx.Count > 0 {
		pop.Gx = &gx
	}
	if err := writeFiles(outFile{policing, pop.WritePolicing}, outFile{freeradius, pop.WriteFreeRADIUS}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d subscribers written\n", len(pop.Users))
	return nil
}

func cmdCompare(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: aaa-loadgen compare [--ceiling FILE]... [--overload FILE]... [--overload-max FILE]... [--overload-1x FILE]... [--rate-base FILE] [--json] RUN.json...")
		fmt.Fprintln(stderr, "Runs carry two labels: the first label seen is the baseline A, the other the candidate B; runs pair up in order.")
		fs.PrintDefaults()
	}
	var ceiling, overload listFlag
	var asJSON bool
	var overloadMax listFlag
	fs.Var(&overloadMax, "overload-max", "JSON report of a closed-loop run that gives the maximum for the overload runs (default: the candidate's median); repeatable: one per --overload, paired in order")
	var at1x listFlag
	fs.Var(&at1x, "overload-1x", "JSON report of an open-loop run at 1× the rate base, the same workload as the overload; repeatable: one per --overload, paired in order")
	rateBase := fs.String("rate-base", "", "JSON report of the closed-loop run the overload's offered rate was derived from, when not the --overload-max runs")
	fs.Var(&ceiling, "ceiling", "JSON report of a ceiling run (e.g. policing with the no-op store); repeatable")
	fs.Var(&overload, "overload", "JSON report of an open-loop overload run; repeatable")
	fs.BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	read := func(paths []string) ([]*report.Report, error) {
		var out []*report.Report
		for _, p := range paths {
			r, err := report.ReadReport(p)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	runs, err := read(fs.Args())
	if err != nil {
		return err
	}
	ce, err := read(ceiling)
	if err != nil {
		return err
	}
	ov, err := read(overload)
	if err != nil {
		return err
	}
	c, err := report.Compare(runs, ce, ov)
	if err != nil {
		return err
	}
	// Reports paired with the overload runs: the maxima and the runs at 1×.
	for _, p := range []struct {
		paths listFlag
		set   func(...*report.Report) error
	}{{overloadMax, c.SetOverloadMax}, {at1x, c.SetAt1x}} {
		if len(p.paths) == 0 {
			continue
		}
		rs, err := read(p.paths)
		if err != nil {
			return err
		}
		if err := p.set(rs...); err != nil {
			return err
		}
	}
	if *rateBase != "" {
		b, err := report.ReadReport(*rateBase)
		if err != nil {
			return err
		}
		c.SetRateBase(b)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	}
	return c.WriteMarkdown(stdout)
}

func cmdSummary(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	medianTPS := fs.Bool("median-tps", false, "print only the median incoming TPS of the reports (an integer)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("summary: no report given")
	}
	var tps []float64
	for _, p := range fs.Args() {
		r, err := report.ReadReport(p)
		if err != nil {
			return err
		}
		tps = append(tps, r.IncomingTPS)
		if *medianTPS {
			continue
		}
		l := r.Latency[report.KeyAll]
		cpu := "-"
		if r.CPUMicrosPerTx != nil {
			cpu = fmt.Sprintf("%.1f", *r.CPUMicrosPerTx)
		}
		fmt.Fprintf(stdout, "%-22s %9.0f TPS  p50 %.3f ms  p99 %.3f ms  %s µs/tx  %d timeouts  %d errors\n",
			r.Label, r.IncomingTPS, l.P50, l.P99, cpu, r.Timeouts, r.Errors)
	}
	if *medianTPS {
		fmt.Fprintf(stdout, "%.0f\n", report.Median(tps))
	}
	return nil
}
