package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/openaaa/openaaa/services/loadgen/internal/gxload"
	"github.com/openaaa/openaaa/services/loadgen/internal/procstat"
)

// defaultIMSIBase is the first IMSI of the generated Gx subscribers: MCC 001, MNC 01, the
// test network of 3GPP TS 23.003.
const defaultIMSIBase = 1010000000001

// cmdGx is `aaa-loadgen gx`: a PCEF's Gx sessions against policy servers (docs/diameter-gx.md).
func cmdGx(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gx", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var targets, pids listFlag
	var cfg gxload.Config
	var dist, framedIP string
	var out outFlags
	fs.Var(&targets, "target", "policy server host:port (Diameter, TCP), one per data center; repeatable or comma-separated")
	fs.StringVar(&cfg.Identity.OriginHost, "origin-host", "pcef.loadgen", "our Origin-Host (the server must allow it as a peer)")
	fs.StringVar(&cfg.Identity.OriginRealm, "origin-realm", "loadgen", "our Origin-Realm")
	fs.StringVar(&cfg.Identity.DestinationRealm, "destination-realm", "", "Destination-Realm of the CCRs (default: the server's realm, from its CEA)")
	fs.IntVar(&cfg.Subscribers, "subscribers", 10000, "subscribers, IMSIs from --imsi-base on, taken in turn")
	fs.Uint64Var(&cfg.IMSIBase, "imsi-base", defaultIMSIBase, "first IMSI (printed with 15 digits), as `aaa-loadgen subscribers --gx-subscribers` writes them")
	fs.StringVar(&framedIP, "framed-ip-base", "10.0.0.1", "Framed-IP-Address of the first subscriber, the next ones follow")
	fs.StringVar(&cfg.APN, "apn", "internet", "Called-Station-Id (APN) of the CCR-I (empty: none)")
	fs.StringVar(&cfg.MonitoringKey, "monitoring-key", "mk1", "Monitoring-Key of the usage reports in CCR-U and CCR-T (empty: no reports)")
	fs.Uint64Var(&cfg.UsedOctets, "used-octets", 1_000_000, "CC-Total-Octets reported in each usage report")
	fs.IntVar(&cfg.Updates, "updates", 5, "CCR-Us per session")
	fs.StringVar(&dist, "distribution", "round-robin", "round-robin (each request of a session to the next target) or sticky")
	fs.IntVar(&cfg.Concurrency, "concurrency", 32, "sessions in progress (closed loop), or their bound (open loop)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "open loop: sessions started per second (0: closed loop)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "run length bound (at most 1h)")
	fs.Uint64Var(&cfg.MaxSessions, "sessions", 0, "session count bound (0: none)")
	fs.DurationVar(&cfg.Timeout, "timeout", 2*time.Second, "answer timeout (the session is then given up)")
	fs.IntVar(&cfg.ConnsPerTarget, "conns", 1, "connections per target")
	fs.BoolVar(&cfg.Failover, "failover", true, "on a timeout or a lost connection, send the request again (T flag) to the next target, as a PCEF fails over between PCRF peers")
	fs.DurationVar(&cfg.Interval, "interval", 0, "pause between the requests of a session (0: none); sessions then stay up for RARs")
	fs.Var(&pids, "server-pid", "PID of a server process to charge CPU to; repeatable")
	out.register(fs, "label of the run in the report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("gx: unexpected argument %q", fs.Arg(0))
	}
	if len(targets) == 0 {
		return errors.New("gx: --target is required")
	}
	cfg.Targets = targets
	switch dist {
	case "round-robin", "rr":
	case "sticky":
		cfg.Sticky = true
	default:
		return fmt.Errorf("gx: --distribution %q: want round-robin or sticky", dist)
	}
	var err error
	if cfg.FramedIPBase, err = netip.ParseAddr(framedIP); err != nil || !cfg.FramedIPBase.Is4() {
		return fmt.Errorf("gx: --framed-ip-base %q: not an IPv4 address", framedIP)
	}
	pidList, err := parsePIDs(pids)
	if err != nil {
		return fmt.Errorf("gx: %w", err)
	}
	if !out.quiet {
		cfg.Progress = func(p gxload.Progress) {
			fmt.Fprintf(stderr, "aaa-loadgen gx: %5.1fs  %8.0f/s  answered %d  timeouts %d  errors %d\n",
				p.Elapsed.Seconds(), p.Rate, p.Answered, p.Timeouts, p.Errors)
		}
	}
	serverCPU := func() (float64, error) {
		var sum float64
		for _, p := range pidList {
			s, err := procstat.Read(p)
			if err != nil {
				return 0, fmt.Errorf("server pid %d: %w", p, err)
			}
			sum += s.CPUSeconds
		}
		return sum, nil
	}
	cpuBefore, err := serverCPU()
	if err != nil {
		return err
	}
	selfBefore, _ := procstat.Read(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := gxload.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("gx: %w", err)
	}
	selfAfter, _ := procstat.Read(0)
	cpu := -1.0
	if len(pidList) > 0 {
		after, err := serverCPU()
		if err != nil {
			return err
		}
		cpu = after - cpuBefore
	}
	rep := gxload.NewReport(&cfg, res, cpu, selfAfter.CPUSeconds-selfBefore.CPUSeconds)
	rep.Label = out.label
	return out.write(stdout, rep)
}
