// Command argocd is Argo CD v3.2.11 (pinned in go.mod) as a multi-call binary, built from the
// Go module proxy by hack/argocd.sh (docs/argocd.md). Like upstream's own cmd/main.go it picks
// its role from the name it is run as, or from ARGOCD_BINARY_NAME. Only the roles OpenAAA runs
// are linked in. Built plain, it is a local Argo CD's components: the application controller,
// the repo server and git's askpass helper (`argocd-gitops`, what make test's Argo CD test
// waits for). Built with the tag cli (cli.go), it is also the CLI, which `make test` uses to
// run our AAACluster health check offline (`argocd admin settings resource-overrides health`),
// and the API server: the CLI links nearly all of Argo CD (a fifth more to compile), so the
// components come first. A module of its own, so that the root module does not depend on Argo
// CD.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/util/log"
)

// role is a command the binary may be run as; cli marks the CLI-like ones, whose errors are
// printed by the error handler (cobra prints nothing itself), as upstream.
type role struct {
	command func() *cobra.Command
	cli     bool
}

var roles = map[string]role{
	"argocd-application-controller": {appcontroller.NewCommand, false},
	"argocd-repo-server":            {reposerver.NewCommand, false},
	// The repo server runs its own binary under this name as git's askpass helper.
	"argocd-git-ask-pass": {gitaskpass.NewCommand, true},
}

// defaultRole is the role of any other name (argocd-linux-amd64, a test's temporary file):
// the CLI where it is linked in (cli.go).
var defaultRole = ""

// handleError reports a command's error and exits; cli.go puts upstream's plugin handler here.
var handleError = func(err error, _ bool, _ []string) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func init() {
	// klog (client-go's logger) through Argo CD's logrus configuration, as upstream does.
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

func main() {
	name := filepath.Base(os.Args[0])
	if v := os.Getenv("ARGOCD_BINARY_NAME"); v != "" {
		name = v
	}
	r, ok := roles[name]
	if !ok {
		if r, ok = roles[defaultRole]; !ok {
			names := make([]string, 0, len(roles))
			for n := range roles {
				names = append(names, n)
			}
			sort.Strings(names)
			fmt.Fprintf(os.Stderr, "%s: run this binary as one of %v (its name or ARGOCD_BINARY_NAME)\n", name, names)
			os.Exit(2)
		}
	}
	command := r.command()
	if r.cli {
		// The error handler prints the error; cobra must not print it and the usage first.
		command.SilenceErrors = true
		command.SilenceUsage = true
	}
	if err := command.Execute(); err != nil {
		handleError(err, r.cli, os.Args)
	}
}
