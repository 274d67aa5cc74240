// Command render-manifests prints the objects of a kustomization directory
// (default config/default) as YAML, as `kubectl kustomize` would, without
// kustomize (see internal/manifests). `make manifests` runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kube-sample/controller-manager/internal/manifests"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s [kustomization-dir]  (default config/default)\n", os.Args[0])
	}
	flag.Parse()
	dir := "config/default"
	switch flag.NArg() {
	case 0:
	case 1:
		dir = flag.Arg(0)
	default:
		flag.Usage()
		os.Exit(2)
	}
	objs, err := manifests.Render(dir)
	if err == nil {
		var out []byte
		if out, err = manifests.Marshal(objs); err == nil {
			_, err = os.Stdout.Write(out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "render-manifests:", err)
		os.Exit(1)
	}
}
