package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/component-base/term"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	"github.com/kube-sample/controller-manager/internal/version"
)

// NewCommand returns the controller-manager command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	fg := loggingFeatureGate()
	var showVersion bool

	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Runs the pod-logger, network and ingress-manager controllers",
		Long: `controller-manager runs Kubernetes controllers built on client-go
(informer -> workqueue -> workers -> level-triggered sync):

  pod-logger        logs every Pod add, update and delete, saying what changed
  network           reconciles samplecrd.k8s.io/v1 Networks into a network backend
  ingress-manager   keeps an Ingress for every Service annotated ingress/http

Select them with --controllers. The cluster is given by --kubeconfig/--master,
KUBECONFIG, the in-cluster config (in a Pod) or ~/.kube/config.

controller-manager migrate-plan prints the HTTPRoutes ingress-manager would
make from the cluster's Ingresses, and what keeps each from moving
(controller-manager migrate-plan --help).`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				_, err := fmt.Fprint(cmd.OutOrStdout(), version.Get())
				return err
			}
			if err := logsapi.ValidateAndApply(o.Logs, fg); err != nil {
				return err
			}
			v := version.Get()
			klog.Background().Info("Starting controller-manager", "version", v.Version, "commit", v.Commit,
				"buildDate", v.BuildDate, "goVersion", v.GoVersion, "platform", v.Platform)
			cliflag.PrintFlags(cmd.Flags())
			config, err := o.Complete()
			if err != nil {
				// One problem a line, before any log output.
				errs := flatten(err)
				for _, e := range errs {
					fmt.Fprintf(cmd.ErrOrStderr(), "error: %v\n", e)
				}
				return fmt.Errorf("invalid flags (%d problems, see above; --help lists every flag)", len(errs))
			}
			cfg, err := config.Clients.RESTConfig()
			if err != nil {
				return err
			}
			ctx := klog.NewContext(signalContext(), klog.Background())
			m, err := NewManager(ctx, config, cfg)
			if err != nil {
				return err
			}
			return m.Run(ctx)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%q does not take arguments, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
	}

	fss := commandFlagSets(o, fg, &showVersion)
	fs := cmd.Flags()
	for _, f := range fss.FlagSets {
		fs.AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	cmd.AddCommand(newMigratePlanCommand())
	return cmd
}

// signalContext returns a context cancelled on the first SIGTERM or
// SIGINT, which drains; a second signal exits at once with code 1.
func signalContext() context.Context {
	ctx := signals.SetupSignalHandler()
	context.AfterFunc(ctx, func() {
		klog.Background().Info("Received SIGTERM or SIGINT: shutting down (send it again to exit at once)")
	})
	return ctx
}

// FlagSets returns the command's flags in their --help sections, as
// NewCommand has them: the source of the generated flag reference.
func FlagSets() cliflag.NamedFlagSets {
	return commandFlagSets(NewOptions(), loggingFeatureGate(), new(bool))
}

// loggingFeatureGate has only the logging feature gates: the manager has
// no gates of its own.
func loggingFeatureGate() featuregate.MutableFeatureGate {
	fg := featuregate.NewFeatureGate()
	utilruntime.Must(logsapi.AddFeatureGates(fg))
	return fg
}

// commandFlagSets are o's flags, the logging feature gates of fg and
// --version.
func commandFlagSets(o *Options, fg featuregate.MutableFeatureGate, showVersion *bool) cliflag.NamedFlagSets {
	fss := o.Flags()
	fg.AddFlag(fss.FlagSet("logging"))
	fss.FlagSet("global").BoolVar(showVersion, "version", false,
		"Print the version, the commit, the build date (the commit's date) and the Go version, then exit.")
	return fss
}
