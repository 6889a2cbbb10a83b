// Command trainsonnet renders Kubernetes manifests for distributed training
// jobs from typed Jsonnet prototypes. All of it lives in internal/cli.
package main

import (
	"os"

	"github.com/trainsonnet/trainsonnet/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
