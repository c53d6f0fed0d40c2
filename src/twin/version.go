package main

import (
	"fmt"
	"runtime/debug"
)

// printVersions prints the module versions this binary was built from, one "path version" a line.
func printVersions() {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	fmt.Printf("go %s\n", info.GoVersion)
	for _, m := range info.Deps {
		if m.Path == "k8s.io/kubernetes" || m.Path == "go.etcd.io/etcd/server/v3" {
			v := m.Version
			if m.Replace != nil {
				v = m.Replace.Version
			}
			fmt.Printf("%s %s\n", m.Path, v)
		}
	}
}
