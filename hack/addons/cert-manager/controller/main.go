// Command cert-manager-controller is OpenAAA's own small main for cert-manager's controller
// (issue 12, docs/addons.md): upstream's cmd/controller module is not on the Go module proxy,
// only the library module github.com/cert-manager/cert-manager is, so this program wires the
// library's controllers together itself. It runs only what a CA or self-signed issuer chain
// needs: the Certificate controllers, the CertificateRequest approver and the CA and
// SelfSigned signers, and the Issuer and ClusterIssuer controllers. No ACME, Vault or Venafi,
// no ingress/gateway shims, no CertificateSigningRequest signers, no leader election (one
// replica). The webhook and the cainjector are the sibling commands ../webhook, ../cainjector.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/metrics"

	"github.com/cert-manager/cert-manager/openaaa-addons/cmdmain"

	// Each import registers its controller in controllerpkg.Known() (or its issuer type in the
	// issuer factory); what is not imported is not compiled in.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// version is set at build time (-X main.version=...) by hack/addons.sh.
var version = "dev"

func main() {
	var (
		kubeconfig       = flag.String("kubeconfig", "", "kubeconfig file (default: in-cluster configuration)")
		clusterNamespace = flag.String("cluster-resource-namespace", "cert-manager", "namespace of the Secrets ClusterIssuers refer to")
		namespace        = flag.String("namespace", "", "only this namespace (default: all)")
		metricsAddr      = flag.String("metrics-listen-address", ":9402", "address of the Prometheus metrics endpoint (empty: none)")
		workers          = flag.Int("concurrent-workers", 5, "workers per controller")
		qps              = flag.Float64("kube-api-qps", 20, "API server requests per second")
		burst            = flag.Int("kube-api-burst", 50, "API server request burst")
		enableOwnerRef   = flag.Bool("enable-certificate-owner-ref", false, "make each Certificate the owner of its Secret")
	)
	cmdmain.Parse(func() string {
		return fmt.Sprintf("cert-manager-controller %s (OpenAAA main; controllers: %v)", version, names())
	})
	cmdmain.Run("cert-manager-controller", func(ctx context.Context) error {
		return run(ctx, options{
			kubeconfig: *kubeconfig, clusterNamespace: *clusterNamespace, namespace: *namespace,
			metricsAddr: *metricsAddr, workers: *workers, qps: float32(*qps), burst: *burst,
			enableOwnerRef: *enableOwnerRef,
		})
	})
}

type options struct {
	kubeconfig, clusterNamespace, namespace, metricsAddr string
	workers, burst                                       int
	qps                                                  float32
	enableOwnerRef                                       bool
}

// names are the registered controllers, sorted: exactly those imported above.
func names() []string {
	var n []string
	for name := range controllerpkg.Known() {
		n = append(n, name)
	}
	sort.Strings(n)
	return n
}

func run(ctx context.Context, o options) error {
	log := klog.FromContext(ctx).WithName("cert-manager-controller")
	ctx = logf.NewContext(ctx, log)
	clk := clock.RealClock{}
	m := metrics.New(log, clk)

	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         o.kubeconfig,
		KubernetesAPIQPS:   o.qps,
		KubernetesAPIBurst: o.burst,
		Namespace:          o.namespace,
		Clock:              clk,
		Metrics:            m,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: o.clusterNamespace},
		CertificateOptions: controllerpkg.CertificateOptions{EnableOwnerRef: o.enableOwnerRef},
	})
	if err != nil {
		return err
	}

	// Every constructor registers the informers it needs; the factories start only after all
	// of them ran, and each controller's Run waits for its caches to sync.
	type named struct {
		name string
		c    controllerpkg.Interface
	}
	var loops []named
	for _, name := range names() {
		c, err := controllerpkg.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		loops = append(loops, named{name, c})
	}
	// Build is the only way to the factory's shared informer factories (the same ones every
	// controller's Context holds).
	base, err := factory.Build()
	if err != nil {
		return err
	}
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.SharedInformerFactory.Start(ctx.Done())

	errs := make(chan error, len(loops)+1)
	var wg sync.WaitGroup
	if o.metricsAddr != "" {
		ln, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		srv := m.NewServer(ln)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("metrics server: %w", err)
			}
		}()
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	for _, l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log.Info("starting controller", "controller", l.name)
			if err := l.c.Run(o.workers, ctx); err != nil {
				errs <- fmt.Errorf("controller %s: %w", l.name, err)
			}
		}()
	}
	select {
	case <-ctx.Done():
		wg.Wait()
		return nil
	case err := <-errs:
		return err
	}
}
