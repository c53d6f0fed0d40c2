package main

import (
	"fmt"
	"runtime/debug"
)

// the modules whose versions `version` prints
var versioned = []string{
	"github.com/argoproj/argo-cd/v3", "github.com/argoproj/argo-cd/gitops-engine", "sigs.k8s.io/kwok", "github.com/kubeflow/mpi-operator",
	"github.com/kubeflow/training-operator", "sigs.k8s.io/kustomize/kustomize/v5", "helm.sh/helm/v4", "github.com/alicebob/miniredis/v2", "k8s.io/client-go",
}

// printVersions prints the module versions this binary was built from, one "path version" a line.
func printVersions() {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	fmt.Printf("go %s\n", info.GoVersion)
	for _, m := range info.Deps {
		for _, want := range versioned {
			if m.Path == want {
				v := m.Version
				if m.Replace != nil {
					v = m.Replace.Version
				}
				fmt.Printf("%s %s\n", m.Path, v)
			}
		}
	}
}
