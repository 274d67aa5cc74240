package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	managermetrics "github.com/kube-sample/controller-manager/internal/metrics"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// neutronPhase measures, against the real Neutron of Config.OpenStackDir,
// Networks/s to Ready at each worker count beside the rate at which a
// direct gophercloud client makes the same requests (network, tags,
// subnet, tags) at the same concurrency: Neutron's own limit.
func (r *run) neutronPhase(ctx context.Context) error {
	if (r.cfg.NeutronNetworks <= 0 && r.cfg.NeutronImportNetworks <= 0) || r.cfg.OpenStackDir == "" {
		return fmt.Errorf("%w: no OpenStack (run through hack/with-openstack.sh, as `make bench` does)", errSkipped)
	}
	cloud, err := neutrontest.Load(r.cfg.OpenStackDir)
	if err != nil {
		return err
	}
	direct, err := neutrontest.NewClient(cloud.Env())
	if err != nil {
		// The run is in its private network namespace (for the routable
		// step), where the servers on the host's loopback are out of
		// reach: start an OpenStack of its own here.
		r.cfg.logf("neutron: the OpenStack of %s is out of reach (%v); starting one in this network namespace", r.cfg.OpenStackDir, err)
		if cloud, err = r.ownOpenStack(ctx); err != nil {
			return err
		}
		if direct, err = neutrontest.NewClient(cloud.Env()); err != nil {
			return err
		}
	}
	jsonCfg := rest.CopyConfig(r.admin)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "", ""
	client, err := versioned.NewForConfig(jsonCfg)
	if err != nil {
		return err
	}
	for _, w := range r.cfg.NeutronWorkers {
		if r.cfg.NeutronNetworks <= 0 {
			break
		}
		c := NeutronCase{Workers: w, Networks: r.cfg.NeutronNetworks}
		if c.DirectPerSecond, err = r.neutronDirect(ctx, direct, w); err != nil {
			return fmt.Errorf("direct client, concurrency %d: %w", w, err)
		}
		if err := r.neutronController(ctx, cloud, jsonCfg, client, &c); err != nil {
			return fmt.Errorf("controller, %d workers: %w", w, err)
		}
		c.Ratio = c.PerSecond / c.DirectPerSecond
		r.res.Neutron = append(r.res.Neutron, c)
		r.cfg.logf("neutron: %d workers: controller %.1f Networks/s, direct client %.1f/s (%.2f x), %.1f Neutron requests/Network: %v",
			w, c.PerSecond, c.DirectPerSecond, c.Ratio, c.RequestsPerNetwork, c.RequestKinds)
	}
	if r.cfg.NeutronRestartNetworks > 0 {
		restart, err := r.neutronRestart(ctx, cloud, jsonCfg, client)
		if restart != nil { // measured, even if its cleanup failed
			r.res.NeutronRestart = restart
			r.cfg.logf("neutron: restart with %d converged Networks: %d Neutron requests (page size %d)", restart.Networks, restart.Requests, restart.PageSize)
		}
		if err != nil {
			return fmt.Errorf("restart with %d converged Networks: %w", r.cfg.NeutronRestartNetworks, err)
		}
	}
	if r.cfg.NeutronImportNetworks > 0 {
		for _, policy := range []samplecrdv1.ManagementPolicy{samplecrdv1.ManagementPolicyUnmanaged, samplecrdv1.ManagementPolicyManaged} {
			c, err := r.neutronImport(ctx, cloud, direct, jsonCfg, client, policy)
			if c != nil {
				r.res.NeutronImport = append(r.res.NeutronImport, *c)
				r.cfg.logf("neutron: %d %s imports Ready in %.1fs (%.1f/s), %.2f Neutron requests/Network (%v); a restart with them: %d requests",
					c.Networks, c.Policy, c.Seconds, c.PerSecond, c.RequestsPerNetwork, c.RequestKinds, c.RestartRequests)
			}
			if err != nil {
				return fmt.Errorf("import case, %s: %w", policy, err)
			}
		}
	}
	return nil
}

// neutronImport makes NeutronImportNetworks networks (each with a subnet)
// in Neutron as the member user, with gophercloud directly, as an operator
// or Terraform would; then measures as many Networks of policy importing
// them by ID to Ready and the Neutron requests they cost (their start's
// List apart), then the requests of a manager restarted with them all
// bound, until it has synced every one again; then deletes the networks
// (not counted).
func (r *run) neutronImport(ctx context.Context, cloud *neutrontest.Cloud, direct *gophercloud.ServiceClient, cfg *rest.Config,
	client versioned.Interface, policy samplecrdv1.ManagementPolicy) (_ *NeutronImport, err error) {
	const workers, perNetwork = 4, 3 * time.Second
	m, managedBy := r.cfg.NeutronImportNetworks, neutrontest.UniqueManagedBy()
	ids := make([]string, m)
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.phaseTimeout()+time.Duration(m)*perNetwork)
		defer cancel()
		if _, derr := parallel(dctx, m, 8, func(ctx context.Context, i int) error {
			if ids[i] == "" {
				return nil
			}
			if err := networks.Delete(ctx, direct, ids[i]).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
				return err
			}
			return nil
		}); derr != nil && err == nil {
			err = fmt.Errorf("deleting the imported networks: %w", derr)
		}
	}()
	r.cfg.logf("neutron: making %d networks to import (%s)", m, policy)
	if _, err := parallel(ctx, m, workers, func(ctx context.Context, i int) error {
		n, err := networks.Create(ctx, direct, networks.CreateOpts{Name: fmt.Sprintf("bench-import-%d", i)}).Extract()
		if err != nil {
			return err
		}
		ids[i] = n.ID
		gw := fmt.Sprintf("10.%d.%d.1", 128+i/256, i%256)
		_, err = subnets.Create(ctx, direct, subnets.CreateOpts{NetworkID: n.ID, CIDR: fmt.Sprintf("10.%d.%d.0/24", 128+i/256, i%256),
			GatewayIP: &gw, IPVersion: gophercloud.IPv4}).Extract()
		return err
	}); err != nil {
		return nil, fmt.Errorf("making the networks to import: %w", err)
	}
	user, backend, err := r.neutronUser(ctx, cloud, managedBy)
	if err != nil {
		return nil, err
	}
	c := &NeutronImport{Policy: string(policy), Networks: m, Workers: workers}
	ns := "bench-neutron-import-" + strings.ToLower(string(policy))
	var log *neutrontest.AccessLog
	spec := func(i int) samplecrdv1.NetworkSpec {
		return samplecrdv1.NetworkSpec{ManagementPolicy: policy, Import: &samplecrdv1.NetworkImport{NetworkID: ids[i]}}
	}
	took, err := r.networksToReadyWith(ctx, cfg, client, ns, m, workers, backend, perNetwork, spec,
		func(context.Context) (err error) { log, err = cloud.AccessLog(); return err },
		func(ctx context.Context) error {
			reqs, err := log.Requests(ctx, user.ID)
			if err != nil {
				return err
			}
			binds := 0
			c.RequestKinds = map[string]int{}
			for _, q := range reqs {
				if !q.IsList(managedBy) && q.Path != "/" {
					binds++ // the start's List and the client's discovery are no Network's
					c.RequestKinds[requestKind(q)]++
				}
			}
			c.RequestsPerNetwork = float64(binds) / float64(m)
			return nil
		})
	if err != nil {
		return c, err
	}
	c.Seconds = took.Seconds()
	c.PerSecond = float64(m) / c.Seconds

	// The restart, as neutronRestart measures it.
	rctx, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout())
	defer cancel()
	if log, err = cloud.AccessLog(); err != nil {
		return c, err
	}
	if backend, err = neutron.New(rctx, neutron.Options{Getenv: neutrontest.Getenv(user.Env), ManagedBy: managedBy}); err != nil {
		return c, err
	}
	managermetrics.SetNetworkBackendUp("neutron", false)
	queue := framework.MarkQueue(network.Name)
	done, stop, err := startNetworkManager(rctx, cfg, ns, workers, backend)
	if err != nil {
		return c, err
	}
	defer func() { _ = stop() }()
	if err := wait.PollUntilContextCancel(rctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("the manager stopped: %v", stop())
		default:
		}
		up, _ := framework.InProcessMetric("controller_network_backend_up", map[string]string{"backend": "neutron"})
		return up == 1 && queue.Idle(), nil
	}); err != nil {
		return c, fmt.Errorf("waiting for the restarted controller to sync every Network: %w", err)
	}
	reqs, err := log.Requests(rctx, user.ID)
	if err != nil {
		return c, err
	}
	for _, q := range reqs {
		if q.Path != "/" { // the new client's discovery
			c.RestartRequests++
			c.RestartPaths = append(c.RestartPaths, requestKind(q))
		}
	}
	return c, stop()
}

// neutronUser makes a Keystone user of the run's own, whose requests
// Neutron's access log tells apart, and a backend authenticated as it.
func (r *run) neutronUser(ctx context.Context, cloud *neutrontest.Cloud, managedBy string) (*neutrontest.User, *neutron.Backend, error) {
	user, err := cloud.NewUser(ctx)
	if err != nil {
		return nil, nil, err
	}
	r.cleanups = append(r.cleanups, func() { _ = user.Delete(context.Background()) })
	backend, err := neutron.New(ctx, neutron.Options{Getenv: neutrontest.Getenv(user.Env), ManagedBy: managedBy})
	if err != nil {
		return nil, nil, err
	}
	return user, backend, nil
}

// neutronRestart converges NeutronRestartNetworks Networks, then starts the
// manager again and counts, in Neutron's access log, the requests it makes
// until it has synced every one of them again; then deletes their Neutron
// networks (not counted).
func (r *run) neutronRestart(ctx context.Context, cloud *neutrontest.Cloud, cfg *rest.Config, client versioned.Interface) (_ *NeutronRestart, err error) {
	// Neutron (one API worker here) creates fastest at low concurrency; its
	// create rate falls as the project fills, hence the generous allowance.
	const workers, perNetwork = 4, 3 * time.Second
	n, managedBy := r.cfg.NeutronRestartNetworks, neutrontest.UniqueManagedBy()
	user, backend, err := r.neutronUser(ctx, cloud, managedBy)
	if err != nil {
		return nil, err
	}
	ns := "bench-neutron-restart"
	r.cfg.logf("neutron: converging %d Networks for the restart (%d workers)", n, workers)
	took, err := r.networksToReady(ctx, cfg, client, ns, n, workers, backend, perNetwork, func(context.Context) error { return nil }, nil)
	if err != nil {
		return nil, err
	}
	r.cfg.logf("neutron: %d Networks converged in %.0fs; restarting the manager", n, took.Seconds())
	res := &NeutronRestart{Networks: n, PageSize: neutron.DefaultPageSize, ConvergeSeconds: took.Seconds()}
	// Their Neutron networks go afterwards, whatever happens, with time of
	// their own: deletes are slower than creates in Neutron.
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.phaseTimeout()+time.Duration(n)*perNetwork)
		defer cancel()
		start := time.Now()
		if derr := deleteNeutronNetworks(dctx, cloud, managedBy); derr != nil && err == nil {
			err = fmt.Errorf("deleting the restart's Neutron networks: %w", derr)
		}
		r.cfg.logf("neutron: the restart's Neutron networks deleted in %.0fs", time.Since(start).Seconds())
	}()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout())
	defer cancel()
	log, err := cloud.AccessLog()
	if err != nil {
		return nil, err
	}
	// A restarted manager authenticates again (to Keystone, not Neutron).
	if backend, err = neutron.New(ctx, neutron.Options{Getenv: neutrontest.Getenv(user.Env), ManagedBy: managedBy}); err != nil {
		return nil, err
	}
	// Until the restarted controller's first List has brought back every
	// Network that waited for it, and its queue is empty.
	managermetrics.SetNetworkBackendUp("neutron", false)
	queue := framework.MarkQueue(network.Name)
	done, stop, err := startNetworkManager(ctx, cfg, ns, workers, backend)
	if err != nil {
		return nil, err
	}
	defer func() { _ = stop() }()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("the manager stopped: %v", stop())
		default:
		}
		up, _ := framework.InProcessMetric("controller_network_backend_up", map[string]string{"backend": "neutron"})
		return up == 1 && queue.Idle(), nil
	}); err != nil {
		return nil, fmt.Errorf("waiting for the restarted controller to sync every Network: %w", err)
	}
	reqs, err := log.Requests(ctx, user.ID)
	if err != nil {
		return nil, err
	}
	res.Requests = len(reqs)
	for _, q := range reqs {
		res.Paths = append(res.Paths, q.String())
	}
	if err := stop(); err != nil {
		return nil, err
	}
	return res, nil
}

// deleteNeutronNetworks deletes the Neutron networks of managed-by value
// managedBy as the admin, one DELETE a network (its subnet goes with it),
// once the manager stopped: the Networks stay in the bench's control plane,
// which goes at the end of the run. Deleting through the controller is not
// what the bench measures, and would load Neutron for minutes.
func deleteNeutronNetworks(ctx context.Context, cloud *neutrontest.Cloud, managedBy string) error {
	admin, err := neutrontest.NewClient(cloud.AdminEnv())
	if err != nil {
		return err
	}
	pages, err := networks.List(admin, networks.ListOpts{Tags: neutron.ManagedByTagPrefix + managedBy}).AllPages(ctx)
	if err != nil {
		return err
	}
	nets, err := networks.ExtractNetworks(pages)
	if err != nil {
		return err
	}
	_, err = parallel(ctx, len(nets), 8, func(ctx context.Context, i int) error {
		if err := networks.Delete(ctx, admin, nets[i].ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			return err
		}
		return nil
	})
	return err
}

// ownOpenStack starts hack/openstack-up.sh's OpenStack in a directory of
// the run, stopped when the run ends.
func (r *run) ownOpenStack(ctx context.Context) (*neutrontest.Cloud, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.tmp, "openstack")
	env := append(os.Environ(), "OPENSTACK_DIR="+dir)
	up := exec.CommandContext(ctx, filepath.Join(root, "hack", "openstack-up.sh"))
	up.Env, up.Stdout, up.Stderr = env, r.cfg.Log, r.cfg.Log
	if up.Stdout == nil {
		up.Stdout, up.Stderr = io.Discard, io.Discard
	}
	r.cleanups = append(r.cleanups, func() {
		down := exec.Command(filepath.Join(root, "hack", "openstack-down.sh"))
		down.Env = env
		_ = down.Run()
	})
	if err := up.Run(); err != nil {
		return nil, fmt.Errorf("starting an OpenStack: %w", err)
	}
	return neutrontest.Load(dir)
}

// neutronDirect creates NeutronNetworks networks with their subnets and
// tags at concurrency w, as the backend does, and returns the rate; then
// deletes them (not timed).
func (r *run) neutronDirect(ctx context.Context, sc *gophercloud.ServiceClient, w int) (float64, error) {
	m := r.cfg.NeutronNetworks
	managedBy := neutrontest.UniqueManagedBy()
	ids := make([]string, m)
	start := time.Now()
	_, err := parallel(ctx, m, w, func(ctx context.Context, i int) error {
		tags := []string{neutron.UIDTagPrefix + fmt.Sprintf("bench-%06d", i), neutron.ManagedByTagPrefix + managedBy}
		n, err := networks.Create(ctx, sc, networks.CreateOpts{Name: fmt.Sprintf("bench-direct-%d", i)}).Extract()
		if err != nil {
			return err
		}
		ids[i] = n.ID
		if _, err := attributestags.ReplaceAll(ctx, sc, "networks", n.ID, attributestags.ReplaceAllOpts{Tags: tags}).Extract(); err != nil {
			return err
		}
		gw := fmt.Sprintf("10.%d.%d.1", i/256, i%256)
		s, err := subnets.Create(ctx, sc, subnets.CreateOpts{NetworkID: n.ID, CIDR: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256),
			GatewayIP: &gw, IPVersion: gophercloud.IPv4}).Extract()
		if err != nil {
			return err
		}
		_, err = attributestags.ReplaceAll(ctx, sc, "subnets", s.ID, attributestags.ReplaceAllOpts{Tags: tags}).Extract()
		return err
	})
	rate := float64(m) / time.Since(start).Seconds()
	_, delErr := parallel(ctx, m, 8, func(ctx context.Context, i int) error {
		if ids[i] == "" {
			return nil
		}
		if err := networks.Delete(ctx, sc, ids[i]).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			return err
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return rate, delErr
}

// neutronController runs the network controller in-process with c.Workers
// workers and the Neutron backend as a Keystone user of its own, and
// measures NeutronNetworks Networks to Ready and the requests Neutron's
// access log shows for that user meanwhile; then deletes their Neutron
// networks (not timed).
func (r *run) neutronController(ctx context.Context, cloud *neutrontest.Cloud, cfg *rest.Config, client versioned.Interface, c *NeutronCase) error {
	managedBy := neutrontest.UniqueManagedBy()
	user, backend, err := r.neutronUser(ctx, cloud, managedBy)
	if err != nil {
		return err
	}
	ns := fmt.Sprintf("bench-neutron-%d", c.Workers)
	var log *neutrontest.AccessLog
	took, err := r.networksToReady(ctx, cfg, client, ns, c.Networks, c.Workers, backend, time.Second,
		func(context.Context) (err error) { log, err = cloud.AccessLog(); return err },
		func(ctx context.Context) error {
			reqs, err := log.Requests(ctx, user.ID)
			if err != nil {
				return err
			}
			creates := 0
			c.RequestKinds = map[string]int{}
			for _, q := range reqs {
				if !q.IsList(managedBy) {
					creates++ // the start's List is no Network's
					c.RequestKinds[requestKind(q)]++
				}
			}
			c.RequestsPerNetwork = float64(creates) / float64(c.Networks)
			return nil
		})
	if err != nil {
		return err
	}
	if err := deleteNeutronNetworks(ctx, cloud, managedBy); err != nil {
		return err
	}
	c.Seconds = took.Seconds()
	c.PerSecond = float64(c.Networks) / c.Seconds
	return nil
}

// requestKind is q without its IDs and query values: "POST /v2.0/networks
// 201", "PUT /v2.0/subnets/{id}/tags 200", "GET /v2.0/networks?description,project_id 200".
func requestKind(q neutrontest.Request) string {
	path, query, _ := strings.Cut(q.Path, "?")
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if i > 2 && p != "tags" {
			parts[i] = "{id}"
		}
	}
	kind := strings.Join(parts, "/")
	if query != "" {
		var keys []string
		for _, kv := range strings.Split(query, "&") {
			k, _, _ := strings.Cut(kv, "=")
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		kind += "?" + strings.Join(keys, ",")
	}
	return fmt.Sprintf("%s %s %d", q.Method, kind, q.Status)
}
