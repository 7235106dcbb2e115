// Package cmdmain is what OpenAAA's three cert-manager mains (../controller, ../webhook,
// ../cainjector) do alike around their own work: the command line with klog's flags and
// -version, cert-manager's logs, and running until SIGINT or SIGTERM.
package cmdmain

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

// Parse adds -version and klog's flags to the command's own and parses the command line; with
// -version it prints versionLine and exits.
func Parse(versionLine func() string) {
	showVersion := flag.Bool("version", false, "print the version and exit")
	klog.InitFlags(flag.CommandLine)
	flag.Parse()
	if *showVersion {
		fmt.Println(versionLine())
		os.Exit(0)
	}
}

// Run starts cert-manager's logs and runs run with a context that SIGINT and SIGTERM cancel; if
// run fails, the command (name) exits 1 with the error logged (at the caller's line).
func Run(name string, run func(ctx context.Context) error) {
	logf.InitLogs()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		klog.ErrorSDepth(1, err, name+" failed")
		klog.Flush()
		os.Exit(1)
	}
}
