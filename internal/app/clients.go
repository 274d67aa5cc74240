package app

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	gatewayv1client "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
)

// RESTConfig returns the config to reach the cluster: --kubeconfig/--master
// when given, else KUBECONFIG, else the in-cluster config when running in a
// Pod, else ~/.kube/config.
func (c *ClientsConfig) RESTConfig() (*rest.Config, error) {
	if c.Kubeconfig != "" || c.Master != "" {
		cfg, err := clientcmd.BuildConfigFromFlags(c.Master, c.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %q / --master %q: %w", c.Kubeconfig, c.Master, err)
		}
		return cfg, nil
	}
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		cfg, err := rest.InClusterConfig()
		if err == nil {
			return cfg, nil
		}
		if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("loading the in-cluster config: %w", err)
		}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no cluster configured: pass --kubeconfig or --master, set KUBECONFIG, run in a Pod, or use `make run` to start a local control plane")
		}
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return cfg, nil
}

// kubeClients are the typed clients of the built-in API groups the manager
// uses. They share one HTTP client (one connection to the API server), as a
// kubernetes.Clientset's groups do; the manager does not build a Clientset:
// kubernetes.Interface names every API group of client-go, and the linker
// then keeps the type descriptors of all their typed clients and apply
// configurations, which the process maps in full at start-up.
type kubeClients struct {
	core           corev1client.CoreV1Interface
	networking     networkingv1client.NetworkingV1Interface
	coordination   coordinationv1client.CoordinationV1Interface
	authentication authenticationv1client.AuthenticationV1Interface
	authorization  authorizationv1client.AuthorizationV1Interface
	discovery      discovery.DiscoveryInterface
}

func newKubeClients(cfg *rest.Config) (*kubeClients, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	c := &kubeClients{}
	if c.core, err = corev1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the core/v1 client: %w", err)
	}
	if c.networking, err = networkingv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the networking.k8s.io/v1 client: %w", err)
	}
	if c.coordination, err = coordinationv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the coordination.k8s.io/v1 client: %w", err)
	}
	if c.authentication, err = authenticationv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the authentication.k8s.io/v1 client: %w", err)
	}
	if c.authorization, err = authorizationv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the authorization.k8s.io/v1 client: %w", err)
	}
	if c.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	return c, nil
}

// clients are every client the manager uses, on one configuration.
type clients struct {
	*kubeClients
	sample  versioned.Interface
	gateway gatewayv1client.GatewayV1Interface
	// leaderElection are the clients of the Lease (and of the lock's
	// reads of core objects).
	leaderElection *kubeClients
}

// newClients makes the clients of c on cfg: one rate limit of
// --kube-api-qps/--kube-api-burst for all of them (throttle), a user agent,
// and protobuf for the built-in types (cheaper to encode and decode than
// JSON). Leader election has clients of its own, as kube-controller-manager
// does: their own limiter of the same QPS and burst, so that a renewal of
// the Lease never waits behind the workers' requests (at a low
// --kube-api-qps under load it would miss the renew deadline, and the
// manager would exit). They still share the connection pool (client-go's
// TLS transport cache keys on the TLS settings alone), where HTTP/2
// multiplexes them.
func newClients(c ClientsConfig, cfg *rest.Config) (*clients, error) {
	shared := throttledConfig(c, cfg, "")
	kube, err := newKubeClients(protobuf(shared))
	if err != nil {
		return nil, err
	}
	out := &clients{kubeClients: kube}
	if out.leaderElection, err = newKubeClients(protobuf(throttledConfig(c, cfg, "leader-election"))); err != nil {
		return nil, fmt.Errorf("creating the leader election clients: %w", err)
	}
	if out.sample, err = versioned.NewForConfig(shared); err != nil {
		return nil, fmt.Errorf("creating the samplecrd client: %w", err)
	}
	if out.gateway, err = gatewayv1client.NewForConfig(shared); err != nil {
		return nil, fmt.Errorf("creating the Gateway API client: %w", err)
	}
	return out, nil
}

// throttledConfig returns a copy of cfg whose requests take their turn
// from a limiter of its own of c's QPS and burst (throttle), and whose user
// agent is the manager's (followed by /who when who is not empty, as
// rest.AddUserAgent does). Every config it returns has another limiter.
func throttledConfig(c ClientsConfig, cfg *rest.Config, who string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if c.QPS > 0 {
		cfg.Wrap(throttle(flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)))
	}
	// The transport holds the requests (throttle), not client-go.
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	if cfg.UserAgent == "" {
		cfg.UserAgent = "controller-manager"
	}
	if who != "" {
		cfg.UserAgent += "/" + who
	}
	return cfg
}

// protobuf returns a copy of cfg that speaks protobuf, for the built-in
// types.
func protobuf(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}
