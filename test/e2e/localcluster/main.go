// Command localcluster starts a local Kubernetes control plane (kube-apiserver and etcd, the
// envtest assets of hack/envtest.sh) with the AAACluster CRD and the third-party CRDs
// installed, writes an admin kubeconfig, and runs until interrupted. There are no kubelets and
// no controllers besides the ones you run: objects are stored and validated, pods never run.
//
//	go run ./test/e2e/localcluster --write-kubeconfig /tmp/openaaa/kubeconfig
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func main() {
	kubeconfig := flag.String("write-kubeconfig", "kubeconfig", "Where to write the admin kubeconfig.")
	assets := flag.String("assets", os.Getenv("KUBEBUILDER_ASSETS"), "Directory with kube-apiserver and etcd (hack/envtest.sh --print-assets).")
	crds := flag.String("third-party-crds", os.Getenv("OPENAAA_THIRD_PARTY_CRDS"), "Directory with the third-party CRDs (hack/envtest.sh --print-crds); empty: none.")
	ownCRDs := flag.String("crds", filepath.Join("config", "crd", "bases"), "Directory with the AAACluster CRD.")
	flag.Parse()

	dirs := []string{*ownCRDs}
	if *crds != "" {
		dirs = append(dirs, *crds)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: *assets, CRDDirectoryPaths: dirs, ErrorIfCRDPathMissing: true}
	if _, err := env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster: start:", err)
		os.Exit(1)
	}
	code := run(env, *kubeconfig)
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster: stop:", err)
	}
	os.Exit(code)
}

func run(env *envtest.Environment, kubeconfig string) int {
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster: admin user:", err)
		return 1
	}
	kc, err := user.KubeConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster: kubeconfig:", err)
		return 1
	}
	tmp := kubeconfig + ".tmp"
	if err := os.WriteFile(tmp, kc, 0o600); err != nil || os.Rename(tmp, kubeconfig) != nil {
		fmt.Fprintln(os.Stderr, "localcluster: write kubeconfig:", err)
		return 1
	}
	fmt.Printf("localcluster: API server %s, kubeconfig %s; Ctrl-C stops it\n", env.Config.Host, kubeconfig)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	_ = os.Remove(kubeconfig)
	return 0
}
