/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command pause is the e2e cluster's pause image (containerd's sandbox image,
// served as registry.k8s.io/pause:3.10 by the local registry): it waits for
// SIGTERM or SIGINT and exits 0, as Kubernetes' own pause does.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--version" { // make image's builder checks nothing, a person may
		fmt.Println("pause (teardown e2e)")
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
