// Command twin is the Argo CD twin of the cluster tests in one binary: the upstream commands of Argo CD
// (github.com/argoproj/argo-cd/v3: the application controller, the repo server, the ApplicationSet controller, the
// API server and the CLI), kubectl (k8s.io/kubectl, the version Argo CD's graph has), KWOK (sigs.k8s.io/kwok), kustomize (sigs.k8s.io/kustomize/kustomize/v5), helm
// (helm.sh/helm/v4), the MPI Operator (github.com/kubeflow/mpi-operator), the Training Operator
// (github.com/kubeflow/training-operator) and a Redis server
// (github.com/alicebob/miniredis/v2, the one Argo CD's own tests use), each
// reached by the name it is run as (a symbolic link named argocd-repo-server, kustomize, helm, as Argo CD's image
// links its one binary) or by its name as the first argument (`twin kwok --kubeconfig ...`). One link pays for all
// of them, and one module graph compiles the Kubernetes libraries they share once. Nothing here is ours but the
// dispatch, the parent-death signal, the Redis listener, the MPI Operator's health port and the Training Operator's certificate folder (see
// ../README.md).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// ParentEnv names the pid of the process that started this one: when set, this process is killed when that one
// ends, however it ends (a test runner that crashed leaves no twin behind). It is taken out of the environment
// at once, so that what this process starts (the repo server's kustomize and helm) does not read it.
const ParentEnv = "TWIN_PARENT_PID"

// byName: the commands by name, each runs with os.Args as its upstream main sees them (the command name first).
var byName = map[string]func(){
	"argocd":                           argocd,
	"argocd-application-controller":    argocd,
	"argocd-applicationset-controller": argocd,
	"argocd-repo-server":               argocd,
	"argocd-server":                    argocd,
	"argocd-git-ask-pass":              argocd,
	"kwok":                             kwok,
	"kubectl":                          kubectl,
	"mpi-operator":                     mpiOperator,
	"training-operator":                trainingOperator,
	"kustomize":                        kustomize,
	"helm":                             helm,
	"redis":                            redis,
	"version":                          printVersions,
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, ok := byName[name]; !ok {
		if len(os.Args) < 2 || byName[os.Args[1]] == nil {
			fmt.Fprintln(os.Stderr, "usage: twin argocd-application-controller|argocd-repo-server|argocd-applicationset-controller|argocd-server|argocd|kubectl|kwok|mpi-operator|training-operator|kustomize|helm|redis|version [flags]")
			os.Exit(2)
		}
		name = os.Args[1]
		os.Args = os.Args[1:]
	}
	os.Args[0] = name
	if name != "mpi-operator" {
		withoutMpiOperatorFlags()
	}
	dieWithParent()
	byName[name]()
}

// dieWithParent asks the kernel for SIGKILL when the parent ends, and exits at once if it already has.
func dieWithParent() {
	want := os.Getenv(ParentEnv)
	if want == "" {
		return
	}
	_ = os.Unsetenv(ParentEnv)
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "twin: prctl(PR_SET_PDEATHSIG): %v\n", errno)
		os.Exit(1)
	}
	if strconv.Itoa(os.Getppid()) != want {
		fmt.Fprintf(os.Stderr, "twin: parent %s ended before this process started\n", want)
		os.Exit(1)
	}
}
