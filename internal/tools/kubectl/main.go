// Command kubectl is kubectl at our Kubernetes version, built from k8s.io/kubectl's command
// package inside this module, for the local cluster's and envtest's scripts (hack/envtest.sh).
//
// Why not k8s.io/kubernetes/cmd/kubectl in the Kubernetes wrapper module: there it shares
// nothing with what `make test` compiles first (helm, the operator), whose graph already holds
// most of kubectl (client-go, cli-runtime, kustomize, kubectl's own util packages); built here
// it costs only its commands on a cold machine (issue 12's budget).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// The verbosity is set before the command is built, as upstream's main does: building it
	// reads the kubeconfig and logs.
	_, _ = logs.GlogSetter(cmd.GetLogVerbosity(os.Args))
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
