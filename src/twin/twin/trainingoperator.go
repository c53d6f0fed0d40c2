package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/kubeflow/training-operator/pkg/config"
	controllerv1 "github.com/kubeflow/training-operator/pkg/controller.v1"
	"github.com/kubeflow/training-operator/pkg/controller.v1/common"
	"github.com/kubeflow/training-operator/pkg/webhooks"
	certrotator "github.com/open-policy-agent/cert-controller/pkg/rotator"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	volcanoclient "volcano.sh/apis/pkg/client/clientset/versioned"
)

// trainingOperatorCertDir is the folder of the Training Operator's webhook certificate, a constant of its package
// (pkg/cert/cert.go: `certDir = "/tmp/k8s-webhook-server/serving-certs"`, the mount of its Secret in the pod): every
// twin of a machine would share it. The one change of ours to the upstream command: this environment variable sets
// that folder (for its certificate rotator and its webhook server alike) when given.
const trainingOperatorCertDir = "TRAINING_OPERATOR_CERT_DIR"

// trainingOperator is the Training Operator's cmd/training-operator.v1/main.go at v1.9.4 (github.com/kubeflow/training-operator),
// its flags on flag.CommandLine, with the certificate folder of trainingOperatorCertDir (its pkg/cert ManageCerts, whose
// folder is a constant, written out below with that folder).
func trainingOperator() {
	scheme := runtime.NewScheme()
	setupLog := ctrl.Log.WithName("setup")
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kubeflowv1.AddToScheme(scheme))
	utilruntime.Must(v1beta1.AddToScheme(scheme))
	utilruntime.Must(schedulerpluginsv1alpha1.AddToScheme(scheme))

	var metricsAddr string
	var enableLeaderElection bool
	var leaderElectionID string
	var probeAddr string
	var enabledSchemes controllerv1.EnabledSchemes
	var gangSchedulerName string
	var namespace string
	var controllerThreads int
	var webhookServerPort int
	var webhookServiceName string
	var webhookSecretName string
	var clientQps int
	var clientBurst int

	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "The address the metric endpoint binds to.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false, "Enable leader election for controller manager.")
	flag.StringVar(&leaderElectionID, "leader-election-id", "1ca428e5.training-operator.kubeflow.org", "The ID for leader election.")
	flag.Var(&enabledSchemes, "enable-scheme", "Enable scheme(s) as --enable-scheme=tfjob --enable-scheme=pytorchjob, case insensitive.")
	flag.StringVar(&gangSchedulerName, "gang-scheduler-name", "", "Now Supporting volcano and scheduler-plugins.")
	flag.StringVar(&namespace, "namespace", os.Getenv("KUBEFLOW_NAMESPACE"), "The namespace to monitor kubeflow jobs.")
	flag.IntVar(&controllerThreads, "controller-threads", 1, "Number of worker threads used by the controller.")
	flag.IntVar(&clientQps, "kube-api-qps", 20, "QPS indicates the maximum QPS to the master from this client.")
	flag.IntVar(&clientBurst, "kube-api-burst", 30, "Maximum burst for throttle.")
	flag.StringVar(&config.Config.PyTorchInitContainerImage, "pytorch-init-container-image", config.PyTorchInitContainerImageDefault, "The image for pytorch init container")
	flag.StringVar(&config.Config.PyTorchInitContainerTemplateFile, "pytorch-init-container-template-file", config.PyTorchInitContainerTemplateFileDefault, "The template file for pytorch init container")
	flag.IntVar(&config.Config.PyTorchInitContainerMaxTries, "pytorch-init-container-max-tries", config.PyTorchInitContainerMaxTriesDefault, "The number of tries for the pytorch init container")
	flag.StringVar(&config.Config.MPIKubectlDeliveryImage, "mpi-kubectl-delivery-image", config.MPIKubectlDeliveryImageDefault, "The image for mpi launcher init container")
	flag.IntVar(&webhookServerPort, "webhook-server-port", 9443, "Endpoint port for the webhook server.")
	flag.StringVar(&webhookServiceName, "webhook-service-name", "training-operator", "Name of the Service used as part of the DNSName")
	flag.StringVar(&webhookSecretName, "webhook-secret-name", "training-operator-webhook-cert", "Name of the Secret to store CA  and server certs")

	opts := zap.Options{Development: true, StacktraceLevel: zapcore.DPanicLevel}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	certDir := "/tmp/k8s-webhook-server/serving-certs"
	if dir := os.Getenv(trainingOperatorCertDir); dir != "" {
		certDir = dir
	}

	var cacheOpts cache.Options
	if namespace != "" {
		cacheOpts = cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}}
	}

	cfg := ctrl.GetConfigOrDie()
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(float32(clientQps), clientBurst)

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		WebhookServer:          webhook.NewServer(webhook.Options{Port: webhookServerPort, CertDir: certDir}),
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         enableLeaderElection,
		LeaderElectionID:       leaderElectionID,
		Cache:                  cacheOpts,
	})
	if err != nil {
		setupLog.Error(err, "unable to start manager")
		os.Exit(1)
	}

	certsReady := make(chan struct{})
	defer close(certsReady)
	// pkg/cert ManageCerts at v1.9.4, its CertDir the folder above
	ns := os.Getenv("MY_POD_NAMESPACE")
	if ns == "" {
		ns = "kubeflow"
	}
	if err = certrotator.AddRotator(mgr, &certrotator.CertRotator{
		SecretKey:             types.NamespacedName{Namespace: ns, Name: webhookSecretName},
		CertDir:               certDir,
		CAName:                "training-operator-ca",
		CAOrganization:        "training-operator",
		DNSName:               fmt.Sprintf("%s.%s.svc", webhookServiceName, ns),
		IsReady:               certsReady,
		Webhooks:              []certrotator.WebhookInfo{{Type: certrotator.Validating, Name: "validator.training-operator.kubeflow.org"}},
		RequireLeaderElection: false,
	}); err != nil {
		setupLog.Error(err, "Unable to set up cert rotation")
		os.Exit(1)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		select {
		case <-certsReady:
			return mgr.GetWebhookServer().StartedChecker()(req)
		default:
			return errors.New("certificates are not ready")
		}
	}); err != nil {
		setupLog.Error(err, "unable to set up ready check")
		os.Exit(1)
	}

	go func() {
		<-certsReady
		gangSchedulingSetupFunc := common.GenNonGangSchedulerSetupFunc()
		if strings.EqualFold(gangSchedulerName, string(common.GangSchedulerVolcano)) {
			gangSchedulingSetupFunc = common.GenVolcanoSetupFunc(volcanoclient.NewForConfigOrDie(mgr.GetConfig()))
			trainingOperatorCRD(mgr, v1beta1.SchemeGroupVersion.WithKind("PodGroup"))
		} else if gangSchedulerName != "" {
			gangSchedulingSetupFunc = common.GenSchedulerPluginsSetupFunc(mgr.GetClient(), gangSchedulerName)
			trainingOperatorCRD(mgr, schedulerpluginsv1alpha1.SchemeGroupVersion.WithKind("PodGroup"))
		}
		if enabledSchemes.Empty() {
			enabledSchemes.FillAll()
		}
		for _, s := range enabledSchemes {
			setupReconcilerFunc, ok := controllerv1.SupportedSchemeReconciler[s]
			if !ok {
				setupLog.Error(errors.New("failed to set up controllers"), "scheme is not supported", "scheme", s)
				os.Exit(1)
			}
			if err := setupReconcilerFunc(mgr, gangSchedulingSetupFunc, controllerThreads); err != nil {
				setupLog.Error(err, "unable to create controller", "scheme", s)
				os.Exit(1)
			}
			setupWebhookFunc, ok := webhooks.SupportedSchemeWebhook[s]
			if !ok {
				setupLog.Error(errors.New("failed to set up controllers"), "scheme is not supported", "scheme", s)
				os.Exit(1)
			}
			if err := setupWebhookFunc(mgr); err != nil {
				setupLog.Error(err, "unable to start webhook server", "scheme", s)
				os.Exit(1)
			}
		}
	}()

	setupLog.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}

// trainingOperatorCRD is main.go's validateCRD: the gang scheduler's PodGroup must be served.
func trainingOperatorCRD(mgr ctrl.Manager, gvk schema.GroupVersionKind) {
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			ctrl.Log.WithName("setup").Error(err, "crd might be missing, please install crd", "apiVersion", gvk.GroupVersion().String(), "kind", gvk.Kind)
		}
		os.Exit(1)
	}
}
