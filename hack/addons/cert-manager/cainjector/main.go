// Command cert-manager-cainjector is OpenAAA's own small main for cert-manager's cainjector
// (issue 12, docs/addons.md): the library's injectors (pkg/controller/cainjector) in a
// controller-runtime manager. It fills the caBundle of webhook configurations, APIServices and
// CRD conversion webhooks annotated with cert-manager.io/inject-ca-from-secret,
// cert-manager.io/inject-ca-from (a Certificate) or cert-manager.io/inject-apiserver-ca.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/api"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"

	"github.com/cert-manager/cert-manager/openaaa-addons/cmdmain"
)

// version is set at build time (-X main.version=...) by hack/addons.sh.
var version = "dev"

func main() {
	var (
		namespace  = flag.String("namespace", "", "only objects of this namespace (default: all)")
		healthAddr = flag.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	)
	cmdmain.Parse(func() string { return fmt.Sprintf("cert-manager-cainjector %s (OpenAAA main)", version) })
	cmdmain.Run("cert-manager-cainjector", func(ctx context.Context) error { return run(ctx, *namespace, *healthAddr) })
}

func run(ctx context.Context, namespace, healthAddr string) error {
	log := klog.FromContext(ctx).WithName("cert-manager-cainjector")
	ctrl.SetLogger(log)
	// --kubeconfig (controller-runtime's flag), else the in-cluster configuration.
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(admissionregistrationv1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(apiregistrationv1.AddToScheme(scheme))
	utilruntime.Must(cmapi.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 log,
		LeaderElection:         false, // one replica, Recreate
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: healthAddr,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", func(_ *http.Request) error { return nil }); err != nil {
		return err
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		Namespace:                    namespace,
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	}); err != nil {
		return fmt.Errorf("registering the injectors: %w", err)
	}
	return mgr.Start(ctx)
}
