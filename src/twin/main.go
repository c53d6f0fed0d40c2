// Command control-plane is the Kubernetes control plane of the test suite in one binary: the upstream commands
// of kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes) and etcd (go.etcd.io/etcd/server/v3),
// each reached by its name as the first argument, so that one link pays for the four. Nothing here is ours
// but the dispatch and the parent-death signal (see README.md).
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	_ "time/tzdata" // for CronJob time zones, as the upstream mains

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as the upstream mains
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as the upstream mains
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as the upstream mains
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// ParentEnv names the pid of the process that started this one: when set, this process is killed when that one
// ends, however it ends (a test runner that crashed leaves no control plane behind).
const ParentEnv = "CONTROL_PLANE_PARENT_PID"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: control-plane etcd|kube-apiserver|kube-controller-manager|kube-scheduler|version [flags]")
		os.Exit(2)
	}
	dieWithParent()
	name := os.Args[1]
	args := append([]string{name}, os.Args[2:]...)
	switch name {
	case "etcd":
		etcdmain.Main(args)
	case "kube-apiserver":
		os.Args = args
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Args = args
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Args = args
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "version":
		printVersions()
	default:
		fmt.Fprintf(os.Stderr, "control-plane: unknown command %q\n", name)
		os.Exit(2)
	}
}

// dieWithParent asks the kernel for SIGKILL when the parent ends, and exits at once if it already has.
func dieWithParent() {
	want := os.Getenv(ParentEnv)
	if want == "" {
		return
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "control-plane: prctl(PR_SET_PDEATHSIG): %v\n", errno)
		os.Exit(1)
	}
	if strconv.Itoa(os.Getppid()) != want {
		fmt.Fprintf(os.Stderr, "control-plane: parent %s ended before this process started\n", want)
		os.Exit(1)
	}
}
