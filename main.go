// Command operator is the OpenAAA operator: it reconciles AAACluster objects
// (aaa.openaaa.io/v1alpha1) into per-DC policing Deployments, Services, autoscalers, a
// K8ssandraCluster and the schema migration Job, and runs AAALoadTests as aaa-loadgen Jobs. Leader election, health probes and metrics
// are on by default.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	aaav1 "github.com/openaaa/openaaa/api/v1alpha1"
	"github.com/openaaa/openaaa/controllers"
	"github.com/openaaa/openaaa/internal/version"
)

func main() {
	var (
		metricsAddr   string
		probeAddr     string
		secureMetrics bool
		leaderElect   bool
		leaderNS      string
		policingImage string
		loadgenImage  string
		crossNSTests  bool
		namespace     string
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address of the metrics endpoint (0 disables it).")
	flag.BoolVar(&secureMetrics, "metrics-secure", false, "Serve metrics over HTTPS with authentication and authorization by the API server.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz probes.")
	flag.BoolVar(&leaderElect, "leader-elect", true, "Elect a leader so that only one replica reconciles.")
	flag.StringVar(&leaderNS, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the operator's namespace).")
	flag.StringVar(&policingImage, "policing-image", controllers.DefaultPolicingImage+":"+version.Version,
		"Default policing image (repository[:tag]) for AAAClusters whose spec.image leaves it out.")
	flag.StringVar(&loadgenImage, "loadgen-image", envOr("OPENAAA_LOADGEN_IMAGE", controllers.DefaultLoadgenImage+":"+version.Version),
		"Default aaa-loadgen image (repository[:tag]) for AAALoadTests whose spec.image leaves it out (default from $OPENAAA_LOADGEN_IMAGE when set).")
	flag.BoolVar(&crossNSTests, "loadtest-allow-cross-namespace", false,
		"Let an AAALoadTest target an AAACluster in another namespace (its Job still runs in the AAALoadTest's namespace).")
	flag.StringVar(&namespace, "namespace", "", "Watch only this namespace (default: all).")
	showVersion := flag.Bool("version", false, "Print the version and exit.")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	if *showVersion {
		fmt.Println("openaaa-operator", version.Version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(aaav1.AddToScheme(scheme))

	mgrOpts := ctrl.Options{
		Scheme: scheme,
		Metrics: metricsserver.Options{
			BindAddress:   metricsAddr,
			SecureServing: secureMetrics,
			TLSOpts:       []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
		},
		HealthProbeBindAddress:        probeAddr,
		LeaderElection:                leaderElect,
		LeaderElectionID:              "aaacluster.aaa.openaaa.io",
		LeaderElectionNamespace:       leaderNS,
		LeaderElectionReleaseOnCancel: true,
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	}
	if secureMetrics {
		// Only callers allowed to get /metrics (TokenReview + SubjectAccessReview).
		mgrOpts.Metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	// Only labelled Secrets and ConfigMaps, not every one of the cluster (docs/security.md).
	mgrOpts.Cache.ByObject = controllers.CacheByObject()
	if namespace != "" {
		mgrOpts.Cache.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), mgrOpts)
	if err != nil {
		log.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	if err := (&controllers.AAAClusterReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorderFor("openaaa-operator"),
		Options:   controllers.Options{PolicingImage: policingImage, Version: version.Version, OperatorNamespace: os.Getenv("POD_NAMESPACE")},
	}).SetupWithManager(mgr); err != nil {
		log.Error(err, "unable to set up the AAACluster controller")
		os.Exit(1)
	}
	if err := (&controllers.AAALoadTestReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorderFor("openaaa-operator"),
		Options: controllers.Options{PolicingImage: policingImage, Version: version.Version,
			LoadgenImage: loadgenImage, AllowCrossNamespaceLoadTests: crossNSTests},
	}).SetupWithManager(mgr); err != nil {
		log.Error(err, "unable to set up the AAALoadTest controller")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "unable to set up the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "unable to set up the ready check")
		os.Exit(1)
	}
	log.Info("starting the operator", "version", version.Version, "policingImage", policingImage, "loadgenImage", loadgenImage)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "the manager stopped")
		os.Exit(1)
	}
}

// envOr is the environment variable key, or def when it is unset or empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
