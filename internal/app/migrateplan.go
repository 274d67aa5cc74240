package app

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/term"
	gatewayv1client "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
)

// migratePlanOptions are migrate-plan's flags.
type migratePlanOptions struct {
	Kubeconfig, Master string
	Namespace          string
	Gateway            string
	DNSDrain           time.Duration
	HTTPRedirectCode   int
	FieldManager       string
}

// flags are migrate-plan's flags, in --help sections as the manager's.
func (o *migratePlanOptions) flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	fs := fss.FlagSet("cluster")
	bindClusterFlags(fs, &o.Kubeconfig, &o.Master)
	fs = fss.FlagSet("plan")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace,
		"Only plan the Ingresses of this namespace, as the manager's --namespace confines it. Empty means all namespaces.")
	fs.StringVar(&o.Gateway, "gateway", o.Gateway,
		"<namespace>/<name> of the Gateway to plan for the Ingresses that do not name one with ingress/gateway (their route's parent, and the HTTPS listeners their spec.tls needs). Empty: such an Ingress's route is shown without a parent.")
	fs.DurationVar(&o.DNSDrain, "ingress-move-dns-drain", o.DNSDrain,
		"The manager's --ingress-move-dns-drain, to tell an Ingress withdrawn from external-dns that still drains from one that moved.")
	fs.IntVar(&o.HTTPRedirectCode, "ingress-nginx-http-redirect-code", o.HTTPRedirectCode, "The manager's --ingress-nginx-http-redirect-code. "+httpRedirectCodeHelp)
	fs.StringVar(&o.FieldManager, "field-manager", o.FieldManager,
		"The manager's --field-manager: a route of an Ingress's name is the one made from it only when that field manager wrote its ingress/migrated-from.")
	return fss
}

// newMigratePlanCommand returns the migrate-plan command.
func newMigratePlanCommand() *cobra.Command {
	o := &migratePlanOptions{DNSDrain: ingressmanager.DefaultDNSDrain, HTTPRedirectCode: ingressmanager.DefaultHTTPRedirectCode, FieldManager: NewOptions().FieldManager}
	cmd := &cobra.Command{
		Use:   "migrate-plan",
		Short: "Prints the HTTPRoute ingress-manager would make from each Ingress, and what keeps it from moving",
		Long: `migrate-plan reads the cluster (it writes nothing) and prints, for every
Ingress in scope that no Service controls, whether it asks to move to the
Gateway API (ingress/gateway), the HTTPRoute ingress-manager would make from
it (YAML), every annotation or setting that blocks the move and why, what
the rendering cannot express, and, for an Ingress that asks to move, where
its move stands: the route made or not, serving or not, the Ingress
withdrawn from external-dns, drained. It renders as the running controller
does. Review it, then annotate the Ingress with ingress/gateway.`,
		SilenceUsage: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%q does not take arguments, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateNamespace(o.Namespace); err != nil {
				return err
			}
			if o.FieldManager == "" {
				return fmt.Errorf("--field-manager: must not be empty")
			}
			if o.DNSDrain < 0 {
				return fmt.Errorf("--ingress-move-dns-drain: must not be negative, got %v", o.DNSDrain)
			}
			if err := validateHTTPRedirectCode(o.HTTPRedirectCode); err != nil {
				return err
			}
			cfg, err := (&ClientsConfig{Kubeconfig: o.Kubeconfig, Master: o.Master}).RESTConfig()
			if err != nil {
				return err
			}
			cfg = throttledConfig(ClientsConfig{}, cfg, "migrate-plan")
			kube, err := newKubeClients(protobuf(cfg))
			if err != nil {
				return err
			}
			clients := ingressmanager.PlanClients{Core: kube.core, Networking: kube.networking}
			served, err := ingressmanager.HTTPRoutesServed(kube.discovery)
			if err != nil {
				return fmt.Errorf("asking whether the Gateway API is served: %w", err)
			}
			if served {
				if clients.Gateway, err = gatewayv1client.NewForConfig(cfg); err != nil {
					return fmt.Errorf("creating the Gateway API client: %w", err)
				}
			}
			return ingressmanager.WritePlan(cmd.Context(), clients, ingressmanager.PlanOptions{
				Namespace: o.Namespace, Gateway: o.Gateway, DNSDrain: o.DNSDrain, HTTPRedirectCode: o.HTTPRedirectCode, FieldManager: o.FieldManager,
			}, cmd.OutOrStdout())
		},
	}
	fss := o.flags()
	for _, f := range fss.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	return cmd
}
