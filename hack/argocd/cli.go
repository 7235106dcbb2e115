//go:build cli

package main

import (
	"errors"
	"os"
	"os/exec"

	apiserver "github.com/argoproj/argo-cd/v3/cmd/argocd-server/commands"
	cli "github.com/argoproj/argo-cd/v3/cmd/argocd/commands"
)

// The CLI and the API server: `argocd` (and any name that is no other role's).
func init() {
	roles["argocd"] = role{cli.NewCommand, true}
	roles["argocd-server"] = role{apiserver.NewCommand, false}
	defaultRole = "argocd"
	// Upstream's handling: an unknown command may be an argocd-NAME plugin on PATH; any other
	// error is printed. Exit with the plugin's status, else 1.
	handleError = func(err error, isCLI bool, args []string) {
		if perr := cli.NewDefaultPluginHandler([]string{"argocd"}).HandleCommandExecutionError(err, isCLI, args); perr != nil {
			var exit *exec.ExitError
			if errors.As(perr, &exit) {
				os.Exit(exit.ExitCode())
			}
			os.Exit(1)
		}
	}
}
