package main

import (
	"k8s.io/component-base/cli"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

// kubectl is kubernetes' cmd/kubectl/kubectl.go (k8s.io/kubectl at the version Argo CD's graph pins): the kubectl
// commands the docs print (annotate, delete, patch) run on a twin as an operator runs them.
func kubectl() {
	command := kubectlcmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
