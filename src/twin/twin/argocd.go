package main

import (
	"errors"
	"os"
	"os/exec"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	applicationset "github.com/argoproj/argo-cd/v3/cmd/argocd-applicationset-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	apiserver "github.com/argoproj/argo-cd/v3/cmd/argocd-server/commands"
	cli "github.com/argoproj/argo-cd/v3/cmd/argocd/commands"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/util/log"
)

// argocd is Argo CD's cmd/main.go at v3.5.1 for the commands the twin runs: the command named by os.Args[0], or by
// ARGOCD_BINARY_NAME (how Argo CD runs itself as its git credential helper).
func argocd() {
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
	binaryName := os.Args[0]
	if val := os.Getenv("ARGOCD_BINARY_NAME"); val != "" {
		binaryName = val
	}
	var command *cobra.Command
	isArgocdCLI := false
	switch binaryName {
	case common.CommandServer:
		command = apiserver.NewCommand()
	case common.CommandApplicationController:
		command = appcontroller.NewCommand()
	case common.CommandRepoServer:
		command = reposerver.NewCommand()
	case common.CommandApplicationSetController:
		command = applicationset.NewCommand()
	case common.CommandGitAskPass:
		command = gitaskpass.NewCommand()
		isArgocdCLI = true
	default:
		command = cli.NewCommand()
		isArgocdCLI = true
	}
	if isArgocdCLI {
		command.SilenceErrors = true
		command.SilenceUsage = true
	}
	if err := command.Execute(); err != nil {
		errMsg, pluginErr := cli.NewDefaultPluginHandler().HandleCommandExecutionError(err, isArgocdCLI, os.Args)
		if pluginErr != nil {
			os.Stdout.WriteString(errMsg)
			var exitErr *exec.ExitError
			if errors.As(pluginErr, &exitErr) {
				os.Exit(exitErr.ExitCode())
			}
			os.Exit(1)
		}
	}
}
