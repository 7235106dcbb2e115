// Command argocd is Argo CD v3.2.11 (pinned in go.mod) as one multi-call binary, built from the
// Go module proxy by hack/argocd.sh (docs/argocd.md). Like upstream's own cmd/main.go it picks
// its role from the name it is run as, or from ARGOCD_BINARY_NAME; only the roles OpenAAA runs
// are linked in: the CLI, which `make test` uses to run our AAACluster health check offline
// (`argocd admin settings resource-overrides health`), and the server, application controller
// and repo server for a local Argo CD. A module of its own, so that the root module does not
// depend on Argo CD.
package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	apiserver "github.com/argoproj/argo-cd/v3/cmd/argocd-server/commands"
	cli "github.com/argoproj/argo-cd/v3/cmd/argocd/commands"
	"github.com/argoproj/argo-cd/v3/util/log"
)

// roles: the command of each name the binary may be run as; cli marks the CLI-like ones, whose
// errors the plugin handler below prints (as upstream).
var roles = map[string]struct {
	command func() *cobra.Command
	cli     bool
}{
	"argocd":                        {cli.NewCommand, true},
	"argocd-server":                 {apiserver.NewCommand, false},
	"argocd-application-controller": {appcontroller.NewCommand, false},
	"argocd-repo-server":            {reposerver.NewCommand, false},
	// The repo server runs its own binary under this name as git's askpass helper.
	"argocd-git-ask-pass": {gitaskpass.NewCommand, true},
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
	role, ok := roles[name]
	if !ok { // any other name (argocd-linux-amd64, a test's temporary file) is the CLI
		role = roles["argocd"]
	}
	command := role.command()
	if role.cli {
		// The plugin handler prints the error; cobra must not print it and the usage first.
		command.SilenceErrors = true
		command.SilenceUsage = true
	}
	err := command.Execute()
	if err == nil {
		return
	}
	// Upstream's handling: an unknown command may be an argocd-NAME plugin on PATH; any other
	// error is printed. Exit with the plugin's status, else 1.
	if perr := cli.NewDefaultPluginHandler([]string{"argocd"}).HandleCommandExecutionError(err, role.cli, os.Args); perr != nil {
		var exit *exec.ExitError
		if errors.As(perr, &exit) {
			os.Exit(exit.ExitCode())
		}
		os.Exit(1)
	}
}
