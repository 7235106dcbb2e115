// Command policing is the OpenAAA policing front node: RADIUS authentication and
// accounting, session store, admin API.
//
//	policing serve --config FILE [--set path=value ...]
//	policing migrate ...       (Cassandra schema migrations)
//	policing check-config --config FILE
//	policing check-policy [--config FILE] SCRIPT.lua
//	policing version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	_ "time/tzdata" // the data policies' rule windows name time zones; the image has no zoneinfo

	"github.com/openaaa/openaaa/internal/version"
	"github.com/openaaa/openaaa/services/policing/config"
	"github.com/openaaa/openaaa/services/policing/internal/app"
	"github.com/openaaa/openaaa/services/policing/internal/ctl"
	"github.com/openaaa/openaaa/services/policing/internal/migrate"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: policing <command> [flags]

commands:
  serve         run the policing node (--config FILE, --set path=value)
  check-config  load and validate a configuration and the files it names (clients, secrets,
                dictionaries, subscribers, Lua policy) as serve does; print it with defaults applied
  check-policy  compile, load and self-test a Lua policy script as a reload would (SCRIPT.lua)
  migrate       apply the Cassandra schema migrations
  ctl           operator commands against a running node (sessions, session, disconnect, coa, gx-rar)
  version       print the version
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stderr)
	case "check-config":
		return checkConfig(args[1:], stdout, stderr)
	case "check-policy":
		return checkPolicy(args[1:], stdout, stderr)
	case "migrate":
		return migrate.Main(ctx, args[1:], stdout, stderr)
	case "ctl":
		return ctl.Main(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "policing", version.Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "policing: unknown command %q\n\n%s", args[0], usage)
	return 2
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// loadConfig parses the common flags and loads the configuration.
func loadConfig(name string, args []string, stderr io.Writer) (*config.Config, error) {
	cfg, _, err := loadConfigWarnings(name, args, stderr)
	return cfg, err
}

// loadConfigWarnings is loadConfig with the warnings of the configuration and of its clients
// file (accepted, likely not meant: an unknown POLICING_* variable, a CIDR with host bits).
func loadConfigWarnings(name string, args []string, stderr io.Writer) (*config.Config, []config.Problem, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", os.Getenv("POLICING_CONFIG"), "configuration file (YAML); env POLICING_CONFIG")
	var sets multiFlag
	fs.Var(&sets, "set", "override one key, e.g. --set radius.workers=32 (repeatable); env POLICING_<KEY_PATH>")
	logLevel := fs.String("log-level", "", "shorthand for --set log.level=LEVEL")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: policing %s --config FILE [--set path=value ...]\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if *logLevel != "" {
		sets = append(sets, "log.level="+*logLevel)
	}
	cfg, warnings, err := config.LoadWithWarnings(*path, sets, os.Environ())
	if err == nil && cfg.ClientsFile != "" {
		warnings = append(warnings, config.ClientsFileWarnings(cfg.ClientsFile)...)
	}
	return cfg, warnings, err
}

// printErrors prints a configuration error one problem a line.
func printErrors(w io.Writer, err error) {
	var errs config.Errors
	if errors.As(err, &errs) && len(errs) > 1 {
		fmt.Fprintf(w, "policing: %d errors in the configuration:\n", len(errs))
		for _, e := range errs {
			fmt.Fprintln(w, "  "+e.Error())
		}
		return
	}
	fmt.Fprintln(w, "policing:", err)
}

func newLogger(cfg *config.Config, w io.Writer) (*slog.Logger, *slog.LevelVar) {
	level := new(slog.LevelVar)
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if cfg.Log.Format == "text" {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(h), level
}

func serve(ctx context.Context, args []string, stderr io.Writer) int {
	cfg, warnings, err := loadConfigWarnings("serve", args, stderr)
	if err != nil {
		printErrors(stderr, err)
		return 2
	}
	log, level := newLogger(cfg, stderr)
	slog.SetDefault(log)
	for _, w := range warnings {
		log.Warn("configuration: " + w.Error())
	}
	node, err := app.Start(ctx, cfg, log, level)
	if err != nil {
		log.Error("cannot start", "err", err.Error())
		return 1
	}
	<-ctx.Done()
	drain, cancel := context.WithTimeout(context.Background(), cfg.Radius.DrainTimeout.D())
	defer cancel()
	if err := node.Shutdown(drain); err != nil {
		log.Error("shutdown incomplete", "err", err.Error())
		return 1
	}
	return 0
}

func checkConfig(args []string, stdout, stderr io.Writer) int {
	cfg, warnings, err := loadConfigWarnings("check-config", args, stderr)
	for _, w := range warnings {
		fmt.Fprintln(stderr, "policing: warning:", w.Error())
	}
	if err != nil {
		printErrors(stderr, err)
		return 2
	}
	// What serve loads from files before it listens is checked too (app.Check).
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := app.Check(cfg, log); err != nil {
		printErrors(stderr, err)
		return 1
	}
	out, _ := yamlOf(cfg)
	fmt.Fprint(stdout, out)
	return 0
}

// checkPolicy loads a Lua policy as the node would (the configuration's policy.* keys, the
// built-in dictionary and radius.dictionaries): compiled, run, its inputs checked and its
// selftest() run.
func checkPolicy(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check-policy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfgFile string
	fs.StringVar(&cfgFile, "config", "", "configuration file (policy.* keys; default: the defaults)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: policing check-policy [--config FILE] SCRIPT.lua")
		return 2
	}
	cfg := config.Default()
	if cfgFile != "" {
		c, err := config.Load(cfgFile, nil, nil)
		if err != nil {
			fmt.Fprintln(stderr, "policing:", err)
			return 2
		}
		cfg = *c
	}
	cfg.Policy.Lua.File = fs.Arg(0)
	log := slog.New(slog.NewTextHandler(stdout, nil))
	if err := app.CheckPolicy(&cfg, log); err != nil {
		fmt.Fprintln(stderr, "policing:", err)
		return 1
	}
	return 0
}
