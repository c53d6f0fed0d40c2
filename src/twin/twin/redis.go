package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/alicebob/miniredis/v2"
)

// redis serves the Redis protocol in process (miniredis, in Argo CD's own module graph: its tests' Redis) on
// --addr until it is signalled: Argo CD's cache of manifests, app state and cluster info, nothing kept.
func redis() {
	fs := flag.NewFlagSet("redis", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "address to listen on")
	_ = fs.Parse(os.Args[1:])
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(*addr); err != nil {
		fmt.Fprintf(os.Stderr, "redis: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("redis: listening on %s\n", m.Addr())
	done := make(chan os.Signal, 1)
	signal.Notify(done, syscall.SIGINT, syscall.SIGTERM)
	<-done
	m.Close()
}
