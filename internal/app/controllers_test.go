package app

import (
	"strings"
	"testing"
	"time"
)

func TestControllerEnabled(t *testing.T) {
	tests := []struct {
		list []string
		name string
		want bool
	}{
		{[]string{"*"}, "pod-logger", true},
		{[]string{"pod-logger"}, "pod-logger", true},
		{[]string{"other"}, "pod-logger", false},
		{[]string{"*", "-pod-logger"}, "pod-logger", false},
		{[]string{"-pod-logger", "*"}, "pod-logger", false},
		{[]string{"pod-logger", "-pod-logger"}, "pod-logger", true}, // first mention wins
		{[]string{"-other"}, "pod-logger", false},
		{[]string{"*", "-other"}, "pod-logger", true},
	}
	for _, tc := range tests {
		if got := controllerEnabled(tc.name, tc.list); got != tc.want {
			t.Errorf("controllerEnabled(%q, %q) = %v, want %v", tc.name, tc.list, got, tc.want)
		}
	}
}

func TestValidateControllers(t *testing.T) {
	tests := []struct {
		list    []string
		wantErr []string // substrings, one per expected problem
	}{
		{list: []string{"*"}},
		{list: []string{"*", "-pod-logger"}},
		{list: []string{"pod-logger"}},
		{list: nil, wantErr: []string{"empty list"}},
		{list: []string{"nope"}, wantErr: []string{`unknown controller "nope"`, "known controllers: "}},
		{list: []string{"*", "-nope", "-"}, wantErr: []string{`unknown controller "-nope"`, `unknown controller "-"`}},
	}
	for _, tc := range tests {
		err := validateControllers(tc.list)
		if len(tc.wantErr) == 0 {
			if err != nil {
				t.Errorf("validateControllers(%q) = %v, want nil", tc.list, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("validateControllers(%q) = nil, want errors %q", tc.list, tc.wantErr)
			continue
		}
		for _, want := range tc.wantErr {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("validateControllers(%q) = %q, want it to contain %q", tc.list, err, want)
			}
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(o *Options)
		wantErr string
	}{
		{"defaults", func(*Options) {}, ""},
		{"bad namespace", func(o *Options) { o.Namespace = "Not_A_Namespace" }, "--namespace"},
		{"zero workers", func(o *Options) { o.Workers["pod-logger"] = 0 }, "--pod-logger-workers: must be at least 1"},
		{"zero qps", func(o *Options) { o.KubeAPIQPS = 0 }, "--kube-api-qps"},
		{"no burst", func(o *Options) { o.KubeAPIBurst = 0 }, "--kube-api-burst"},
		{"negative qps disables limits", func(o *Options) { o.KubeAPIQPS = -1; o.KubeAPIBurst = 0 }, ""},
		{"zero event qps", func(o *Options) { o.EventQPS = 0 }, "--event-qps"},
		{"no event burst", func(o *Options) { o.EventBurst = 0 }, "--event-burst"},
		{"negative event qps disables the limit", func(o *Options) { o.EventQPS = -1; o.EventBurst = 0 }, ""},
		{"negative resync", func(o *Options) { o.ResyncPeriod = -1 }, "--resync-period"},
		{"no shutdown timeout", func(o *Options) { o.ShutdownTimeout = 0 }, "--shutdown-timeout"},
		{"bad metrics address", func(o *Options) { o.MetricsBindAddress = "8080" }, "--metrics-bind-address"},
		{"bad health address", func(o *Options) { o.HealthProbeBindAddress = "example.com:80" }, "--health-probe-bind-address"},
		{"disabled servers", func(o *Options) { o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0" }, ""},
		{"any interface", func(o *Options) { o.MetricsBindAddress = ":8080" }, ""},
		{"certificate without key", func(o *Options) { o.TLSCertFile = "tls.crt" }, "--tls-cert-file (\"tls.crt\") and --tls-private-key-file (\"\"): give both or neither"},
		{"profiling without the metrics server", func(o *Options) { o.Profiling, o.MetricsBindAddress = true, "0" }, "--profiling: the profiles are served by the metrics server"},
		{"key without certificate", func(o *Options) { o.TLSPrivateKeyFile = "tls.key" }, "give both or neither"},
		{"certificate with plain HTTP", func(o *Options) {
			o.TLSCertFile, o.TLSPrivateKeyFile, o.MetricsSecure = "tls.crt", "tls.key", false
		}, "only used with --metrics-secure=true"},
		{"certificate and key", func(o *Options) { o.TLSCertFile, o.TLSPrivateKeyFile = "tls.crt", "tls.key" }, ""},
		{"plain HTTP metrics", func(o *Options) { o.MetricsSecure = false }, ""},
		{"renew >= lease", func(o *Options) {
			o.LeaderElection.LeaderElect = true
			o.LeaderElection.RenewDeadline = o.LeaderElection.LeaseDuration
		}, "--leader-elect-lease-duration"},
		{"retry >= renew", func(o *Options) {
			o.LeaderElection.LeaderElect = true
			o.LeaderElection.RetryPeriod = o.LeaderElection.RenewDeadline
		}, "--leader-elect-renew-deadline"},
		{"leader elect defaults", func(o *Options) { o.LeaderElection.LeaderElect = true }, ""},
		{"empty field manager", func(o *Options) { o.FieldManager = "" }, "--field-manager"},
		{"field manager over 128 characters", func(o *Options) { o.FieldManager = strings.Repeat("m", 129) }, "--field-manager"},
		{"field manager with a control character", func(o *Options) { o.FieldManager = "manager\n" }, "--field-manager"},
		{"field manager checked without ingress-manager", func(o *Options) {
			o.Controllers = []string{"network"}
			o.FieldManager = strings.Repeat("m", 129)
		}, "--field-manager"},
		{"field manager of 128 characters", func(o *Options) { o.FieldManager = strings.Repeat("m", 128) }, ""},
		{"renew within the retry period's jitter", func(o *Options) {
			o.LeaderElection.LeaderElect = true
			o.LeaderElection.RenewDeadline.Duration, o.LeaderElection.RetryPeriod.Duration = 10*time.Second, 9*time.Second
		}, "--leader-elect-renew-deadline (10s) must be greater than 1.2 x --leader-elect-retry-period (9s)"},
		{"lease under a second", func(o *Options) {
			o.LeaderElection.LeaderElect = true
			o.LeaderElection.LeaseDuration.Duration = 900 * time.Millisecond
			o.LeaderElection.RenewDeadline.Duration = 500 * time.Millisecond
			o.LeaderElection.RetryPeriod.Duration = 100 * time.Millisecond
		}, "--leader-elect-lease-duration: must be a whole number of seconds"},
		{"fractional lease", func(o *Options) {
			o.LeaderElection.LeaderElect = true
			o.LeaderElection.LeaseDuration.Duration = 10900 * time.Millisecond
			o.LeaderElection.RenewDeadline.Duration = 10500 * time.Millisecond
		}, "--leader-elect-lease-duration: must be a whole number of seconds"},
		{"sub-second renew and retry", func(o *Options) {
			o.LeaderElection.LeaderElect = true
			o.LeaderElection.LeaseDuration.Duration = 3 * time.Second
			o.LeaderElection.RenewDeadline.Duration = 2500 * time.Millisecond
			o.LeaderElection.RetryPeriod.Duration = 200 * time.Millisecond
		}, ""},
		{"lease name the API server refuses", func(o *Options) {
			o.LeaderElection.LeaderElect = true
			o.LeaderElection.ResourceName = "Controller_Manager"
		}, "--leader-elect-resource-name"},
		{"lease namespace the API server refuses", func(o *Options) {
			o.LeaderElection.LeaderElect = true
			o.LeaderElection.ResourceNamespace = "kube.system"
		}, "--leader-elect-resource-namespace"},
		{"dotted lease name", func(o *Options) {
			o.LeaderElection.LeaderElect = true
			o.LeaderElection.ResourceName = "controller-manager.example.com"
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.mutate(o)
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("Validate() = nil, want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("Validate() = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestFlagsParse(t *testing.T) {
	fs := NewCommand().Flags()
	if err := fs.Parse([]string{"--controllers=*,-pod-logger", "--pod-logger-workers=7", "--namespace=team-a", "--logging-format=json"}); err != nil {
		t.Fatalf("parsing flags: %v", err)
	}
	for flag, want := range map[string]string{
		"controllers":        "[*,-pod-logger]",
		"pod-logger-workers": "7",
		"namespace":          "team-a",
		"logging-format":     "json",
	} {
		if got := fs.Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}
	// Every flag has help text.
	for _, name := range []string{"kubeconfig", "master", "controllers", "namespace", "pod-logger-workers",
		"kube-api-qps", "kube-api-burst", "resync-period", "leader-elect", "leader-elect-resource-namespace",
		"leader-elect-resource-name", "leader-elect-lease-duration", "leader-elect-renew-deadline",
		"leader-elect-retry-period", "metrics-bind-address", "health-probe-bind-address", "logging-format",
		"shutdown-timeout", "version"} {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("flag --%s missing", name)
			continue
		}
		if len(f.Usage) < 10 {
			t.Errorf("flag --%s has no real help text: %q", name, f.Usage)
		}
	}
}

// --version answers without a cluster or any other flag's checks.
func TestVersionFlag(t *testing.T) {
	cmd := NewCommand()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version", "--kube-api-qps=0"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("--version: %v", err)
	}
	for _, want := range []string{"controller-manager ", "commit:", "build date:", "go1."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--version printed %q, want it to say %q", out.String(), want)
		}
	}
}
