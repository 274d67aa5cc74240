// Command controller-manager runs the project's Kubernetes controllers.
package main

import (
	"os"

	// Mozilla's CA roots, pinned by go.mod and listed in the SBOM, for a
	// system without its own: the image has none, so that it holds nothing
	// of the machine that built it. A bundle the system does have (a mounted
	// file, SSL_CERT_FILE) is used instead.
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/component-base/cli"

	"github.com/kube-sample/controller-manager/internal/app"
)

func main() {
	app.SetDefaultGCPercent()
	os.Exit(cli.Run(app.NewCommand()))
}
