// Command controller-manager runs the project's Kubernetes controllers.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/kube-sample/controller-manager/internal/app"
)

func main() {
	app.SetDefaultGCPercent()
	os.Exit(cli.Run(app.NewCommand()))
}
