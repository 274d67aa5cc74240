package network

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-sample/controller-manager/internal/metrics"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// report makes the running controller the source of the metrics read at
// each scrape (controller_networks, controller_network_cloud_up) until the
// returned func is called.
func (c *Controller) report() (stop func()) {
	stopNetworks := metrics.ReportNetworks(c.countNetworks)
	stopClouds := metrics.ReportNetworkClouds(c.cloudsUp)
	return func() { stopNetworks(); stopClouds() }
}

// countNetworks adds each cached Network by namespace and by the status and
// reason of its Ready condition (Unknown, no reason, before its first sync).
func (c *Controller) countNetworks(add func(namespace, ready, reason string)) {
	objs, err := c.lister.List(everything)
	if err != nil {
		return
	}
	for _, obj := range objs {
		ready, reason := string(metav1.ConditionUnknown), ""
		if cond := meta.FindStatusCondition(obj.Status.Conditions, samplecrdv1.ConditionReady); cond != nil {
			ready, reason = string(cond.Status), cond.Reason
		}
		add(obj.Namespace, ready, reason)
	}
}

// cloudsUp adds each cloud of the Networks' own credentials that has been
// scanned, once per namespace of the cached Networks that use it: whose
// Secret resolves to it, or that are bound to it (it acted for them, and
// they wait for it still when their Secret points elsewhere or is gone). A
// cloud no Network uses is not reported: it stops at its next scan.
func (c *Controller) cloudsUp(add func(backend, cloud, namespace string, up bool)) {
	objs, err := c.lister.List(everything)
	if err != nil {
		return
	}
	namespaceOf := make(map[types.UID]string, len(objs))
	named := map[secretRef]bool{}
	for _, obj := range objs {
		namespaceOf[obj.UID] = obj.Namespace
		if ref := obj.Spec.CloudCredentialsRef; ref != nil {
			named[secretRef{namespace: obj.Namespace, secret: ref.SecretName, cloud: ref.CloudName}] = true
		}
	}
	users := c.clouds.usersIn(namespaceOf)
	for _, cl := range c.clouds.all() {
		if cl.state.unknown() {
			continue
		}
		up := cl.state.isUp()
		namespaces := users[cl.key]
		if namespaces == nil {
			namespaces = map[string]bool{}
		}
		cl.mu.Lock()
		for r := range cl.refs {
			// A Secret no Network names any more is forgotten at the
			// next garbage collection; its namespace goes now.
			if named[r] {
				namespaces[r.namespace] = true
			}
		}
		cl.mu.Unlock()
		for ns := range namespaces {
			add(c.opts.BackendName, cl.description, ns, up)
		}
	}
}
