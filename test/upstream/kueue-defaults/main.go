// Command kueue-defaults prints Kueue's built-in manager configuration defaults: an empty
// config.kueue.x-k8s.io/v1beta2 Configuration run through the release's own defaulting
// (SetDefaults_Configuration), as JSON, with the Kueue release this binary was built from.
//
// One generator, one module file per release upgrade-plan compares: go.mod (the release the toolkit
// pins) and kueue-<release>.mod (-modfile) for each release before it. test/upstream/kueue-defaults.test.ts
// builds it per release, runs it and compares what it prints with src/upstream/facts/<release folder>/config-defaults.json.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	configv1beta2 "sigs.k8s.io/kueue/apis/config/v1beta2"
)

const kueueModule = "sigs.k8s.io/kueue"

func main() {
	release := flag.String("release", "", "the Kueue release the facts are for (its module file's; printed as given)")
	flag.Parse()
	if *release == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: kueue-defaults -release VERSION")
		os.Exit(2)
	}
	built := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == kueueModule {
				built = dep.Version
			}
		}
	}
	if built == "" {
		fmt.Fprintln(os.Stderr, "kueue-defaults: the build information names no "+kueueModule+" module")
		os.Exit(1)
	}
	// The namespace falls back to the one of the pod's service account, when there is one, else
	// DefaultNamespace: given here, so that a run inside a pod (a CI job) prints the same facts.
	namespace := configv1beta2.DefaultNamespace
	cfg := &configv1beta2.Configuration{Namespace: &namespace}
	configv1beta2.SetDefaults_Configuration(cfg)
	out, err := json.MarshalIndent(struct {
		Release       string                       `json:"release"`
		Built         string                       `json:"built"`
		Defaulting    string                       `json:"defaulting"`
		Configuration *configv1beta2.Configuration `json:"configuration"`
	}{*release, kueueModule + " " + built, kueueModule + "/apis/config/v1beta2.SetDefaults_Configuration of an empty Configuration", cfg}, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "kueue-defaults:", err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
