package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	_ "unsafe" // go:linkname

	"github.com/kubeflow/mpi-operator/cmd/mpi-operator/app"
	"github.com/kubeflow/mpi-operator/cmd/mpi-operator/app/options"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// mpiOperatorHealthPort is the port of the MPI Operator's health check, a constant 8080 of its package
// (cmd/mpi-operator/app/server.go: `healthCheckPort = 8080`, no flag): two twins on one machine, or anything else on
// 8080, would end it at start ("Error starting server for health check"). The one change of ours to the upstream
// command: this environment variable sets that port when given.
const mpiOperatorHealthPort = "MPI_OPERATOR_HEALTH_CHECK_PORT"

//go:linkname healthCheckPort github.com/kubeflow/mpi-operator/cmd/mpi-operator/app.healthCheckPort
var healthCheckPort int

// mpiOperator is the MPI Operator's cmd/mpi-operator/main.go at v0.8.2 (its flags on flag.CommandLine, klog's among
// them), with the health check port of mpiOperatorHealthPort.
func mpiOperator() {
	if port := os.Getenv(mpiOperatorHealthPort); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mpi-operator: %s=%q is not a port\n", mpiOperatorHealthPort, port)
			os.Exit(2)
		}
		healthCheckPort = n
	}
	s := options.NewServerOption()
	s.AddFlags(flag.CommandLine)

	flag.Parse()

	if s.MonitoringPort != 0 {
		go func() {
			klog.Infof("Setting up client for monitoring on port: %d", s.MonitoringPort)
			http.Handle("/metrics", promhttp.Handler())
			err := http.ListenAndServe(fmt.Sprintf(":%d", s.MonitoringPort), nil)
			if err != nil {
				klog.Error("Monitoring endpoint setup failure.", err)
			}
		}()
	}

	if err := app.Run(s); err != nil {
		klog.Fatalf("%v\n", err)
	}
}

// withoutMpiOperatorFlags takes out of flag.CommandLine the flags of klog that the MPI Operator's options package
// registers there in its init (cmd/mpi-operator/app/options: `klog.InitFlags(nil)`), which runs in every command of
// this binary: Argo CD registers them again (util/cli SetGLogLevel: `klog.InitFlags(nil)`), and the flag package
// panics on a flag defined twice. Every other flag of flag.CommandLine is kept as it was.
func withoutMpiOperatorFlags() {
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	kept := flag.NewFlagSet(flag.CommandLine.Name(), flag.CommandLine.ErrorHandling())
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if klogFlags.Lookup(f.Name) == nil {
			kept.Var(f.Value, f.Name, f.Usage)
		}
	})
	flag.CommandLine = kept
}
