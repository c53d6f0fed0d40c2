package main

import (
	"errors"
	"log/slog"
	"os"

	"github.com/spf13/pflag"
	helmcmd "helm.sh/helm/v4/pkg/cmd"
	"helm.sh/helm/v4/pkg/kube"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // as helm's cmd/helm
	"sigs.k8s.io/kustomize/kustomize/v5/commands"
	"sigs.k8s.io/kwok/pkg/config"
	kwokcmd "sigs.k8s.io/kwok/pkg/kwok/cmd"
	kwoklog "sigs.k8s.io/kwok/pkg/log"
	"sigs.k8s.io/kwok/pkg/utils/signals"
)

// kwok is KWOK's cmd/kwok/main.go at v0.8.0.
func kwok() {
	flagset := pflag.NewFlagSet("global", pflag.ContinueOnError)
	flagset.ParseErrorsAllowlist.UnknownFlags = true
	flagset.Usage = func() {}
	ctx := signals.SetupSignalContext()
	ctx, logger := kwoklog.InitFlags(ctx, flagset)
	ctx, err := config.InitFlags(ctx, flagset)
	if err != nil {
		_, _ = os.Stderr.Write([]byte(flagset.FlagUsages()))
		logger.Error("Init config flags", "err", err)
		os.Exit(1)
	}
	command := kwokcmd.NewCommand(ctx)
	command.PersistentFlags().AddFlagSet(flagset)
	if err := command.ExecuteContext(ctx); err != nil {
		logger.Error("Execute exit", "err", err)
		os.Exit(1)
	}
}

// kustomize is kustomize's main.go at kustomize/v5.8.1.
func kustomize() {
	if err := commands.NewDefaultCommand().Execute(); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// helm is helm's cmd/helm/helm.go at v4.2.1.
func helm() {
	kube.ManagedFieldsManager = "helm"
	cmd, err := helmcmd.NewRootCmd(os.Stdout, os.Args[1:], helmcmd.SetupLogging)
	if err != nil {
		slog.Warn("command failed", slog.Any("error", err))
		os.Exit(1)
	}
	if err := cmd.Execute(); err != nil {
		var cerr helmcmd.CommandError
		if errors.As(err, &cerr) {
			os.Exit(cerr.ExitCode)
		}
		os.Exit(1)
	}
}
