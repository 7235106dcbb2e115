// Command cert-manager-webhook is OpenAAA's own small main for cert-manager's webhook (issue 12,
// docs/addons.md): it serves the library's admission chain — validation and defaulting of every
// cert-manager resource, the CertificateRequest identity and approval checks — with a serving
// certificate from a CA it keeps in a Secret (the "dynamic" source upstream's chart uses; the
// cainjector puts that CA into the webhook configurations).
//
// The server and its admission plugins are internal packages of the library module; Go lets
// only import paths under github.com/cert-manager/cert-manager/ use them, which is why this
// wrapper module's path sits there (upstream's own cmd modules are separate modules under the
// same prefix for the same reason). It is never published.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/internal/apis/config/shared"
	config "github.com/cert-manager/cert-manager/internal/apis/config/webhook"
	cmwebhook "github.com/cert-manager/cert-manager/internal/webhook"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	"github.com/cert-manager/cert-manager/openaaa-addons/cmdmain"
)

// version is set at build time (-X main.version=...) by hack/addons.sh.
var version = "dev"

func main() {
	var (
		securePort  = flag.Int("secure-port", 10250, "port of the admission webhook (HTTPS)")
		healthzPort = flag.Int("healthz-port", 6080, "port of /healthz and /livez (HTTP)")
		caNamespace = flag.String("dynamic-serving-ca-secret-namespace", "cert-manager", "namespace of the Secret holding the serving CA")
		caName      = flag.String("dynamic-serving-ca-secret-name", "cert-manager-webhook-ca", "name of the Secret holding the serving CA")
		dnsNames    = flag.String("dynamic-serving-dns-names", "", "DNS names of the serving certificate, comma-separated")
		leaf        = flag.Duration("dynamic-serving-leaf-duration", 7*24*time.Hour, "lifetime of a serving certificate")
	)
	cmdmain.Parse(func() string { return fmt.Sprintf("cert-manager-webhook %s (OpenAAA main)", version) })
	if *dnsNames == "" {
		fmt.Fprintln(os.Stderr, "cert-manager-webhook: --dynamic-serving-dns-names is required (the Service's DNS names)")
		os.Exit(2)
	}
	cmdmain.Run("cert-manager-webhook", func(ctx context.Context) error {
		log := klog.FromContext(ctx).WithName("cert-manager-webhook")
		ctx = logf.NewContext(ctx, log)
		srv, err := cmwebhook.NewCertManagerWebhookServer(log, config.WebhookConfiguration{
			SecurePort:  int32(*securePort),
			HealthzPort: int32(*healthzPort),
			// --kubeconfig is controller-runtime's own flag (registered by its config package).
			KubeConfig: flag.Lookup("kubeconfig").Value.String(),
			TLSConfig: shared.TLSConfig{Dynamic: shared.DynamicServingConfig{
				SecretNamespace: *caNamespace,
				SecretName:      *caName,
				DNSNames:        strings.Split(*dnsNames, ","),
				LeafDuration:    *leaf,
			}},
			MetricsListenAddress: "0", // no metrics listener: nothing here scrapes the webhook
		})
		if err != nil {
			return err
		}
		return srv.Run(ctx)
	})
}
