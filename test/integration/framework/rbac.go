package framework

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The manager runs in the integration tests as it runs in a cluster: as the
// ServiceAccount of config/default's Deployment, with exactly the RBAC rules
// of config/default. Main applies that Namespace, ServiceAccount and RBAC to
// the test API server (which authorizes with RBAC); StartManager impersonates
// the account. A verb missing from config/rbac fails the tests.

// FieldManager is the field manager of the objects the framework applies.
const FieldManager = "integration-test"

var (
	// adminConfig is the control plane's admin (system:masters) config,
	// set by Main.
	adminConfig *rest.Config

	rendered struct {
		once sync.Once
		objs []*unstructured.Unstructured
		err  error
	}
)

// Manifests returns (a copy of) the objects of config/default, rendered by
// kustomize's own library with kubectl's defaults (legacy output order), as
// `kubectl apply -k config/default` applies them.
func Manifests() ([]*unstructured.Unstructured, error) {
	rendered.once.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			rendered.err = err
			return
		}
		opts := krusty.MakeDefaultOptions()
		opts.Reorder = krusty.ReorderOptionUnspecified // as kubectl kustomize: legacy order unless the kustomization sets sortOptions
		resources, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", "default"))
		if err != nil {
			rendered.err = fmt.Errorf("rendering config/default: %w", err)
			return
		}
		for _, r := range resources.Resources() {
			// Through JSON: kyaml's maps hold numbers as Go types that
			// unstructured's DeepCopy panics on.
			b, err := r.MarshalJSON()
			o := &unstructured.Unstructured{}
			if err == nil {
				err = o.UnmarshalJSON(b)
			}
			if err != nil {
				rendered.err = fmt.Errorf("rendering config/default: %s: %w", r.CurId(), err)
				return
			}
			rendered.objs = append(rendered.objs, o)
		}
	})
	if rendered.err != nil {
		return nil, rendered.err
	}
	out := make([]*unstructured.Unstructured, len(rendered.objs))
	for i, o := range rendered.objs {
		out[i] = o.DeepCopy()
	}
	return out, nil
}

// ManagerServiceAccount returns the namespace and name of the ServiceAccount
// the manager's Deployment in config/default runs as.
func ManagerServiceAccount() (namespace, name string, err error) {
	objs, err := Manifests()
	if err != nil {
		return "", "", err
	}
	var found []string
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		sa, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
		if sa == "" {
			return "", "", fmt.Errorf("config/default: Deployment %s has no serviceAccountName", o.GetName())
		}
		namespace, name = o.GetNamespace(), sa
		found = append(found, o.GetName())
	}
	if len(found) != 1 {
		return "", "", fmt.Errorf("config/default: want one Deployment, found %d %v", len(found), found)
	}
	return namespace, name, nil
}

// ServiceAccountUser returns the user name and groups the API server gives to
// the tokens of ServiceAccount namespace/name.
func ServiceAccountUser(namespace, name string) (string, []string) {
	return "system:serviceaccount:" + namespace + ":" + name,
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
}

// AsServiceAccount returns a copy of cfg that impersonates ServiceAccount
// namespace/name (cfg's user must be allowed to impersonate, as the admin
// is). It composes with cfg's WrapTransport, which sees the impersonated
// requests.
func AsServiceAccount(cfg *rest.Config, namespace, name string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate.UserName, c.Impersonate.Groups = ServiceAccountUser(namespace, name)
	return c
}

// InstallManagerRBAC applies config/default's Namespaces, ServiceAccounts
// and RBAC objects with cfg (an admin) and waits until the authorizer grants
// every rule. Main does it for the package's control plane; a test that
// starts another control plane calls it for that one.
func InstallManagerRBAC(ctx context.Context, cfg *rest.Config) error {
	objs, err := Manifests()
	if err != nil {
		return err
	}
	var rbac []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			rbac = append(rbac, o)
		}
	}
	return Apply(ctx, cfg, rbac, false)
}

// GrantLeaseAccess is grantLeaseAccess, for a manager run as a process
// (ManagerKubeconfig); applying it again restores rules a test took away.
func GrantLeaseAccess(ctx context.Context, admin *rest.Config, ns string) error {
	return grantLeaseAccess(ctx, admin, ns)
}

// grantLeaseAccess gives the manager's ServiceAccount the rules
// config/default grants it in its own namespace (the leader election Lease)
// in namespace ns too: a copy of each Role and RoleBinding of that namespace,
// rules and subjects unchanged, applied with admin. Tests keep their Leases
// in their own namespaces; this keeps them under exactly the manifest's
// rules.
func grantLeaseAccess(ctx context.Context, admin *rest.Config, ns string) error {
	saNS, _, err := ManagerServiceAccount()
	if err != nil {
		return err
	}
	if ns == saNS {
		return nil // the manifest's own RoleBinding applies
	}
	objs, err := Manifests()
	if err != nil {
		return err
	}
	var copies []*unstructured.Unstructured
	for _, o := range objs {
		if (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && o.GetNamespace() == saNS {
			o.SetNamespace(ns)
			copies = append(copies, o)
		}
	}
	if len(copies) == 0 {
		return fmt.Errorf("config/default has no Role or RoleBinding in %s for the leader election Lease", saNS)
	}
	return Apply(ctx, admin, copies, false)
}

// setupConfig returns the admin config to prepare cfg's API server with:
// Main's, or for another server cfg without impersonation or transport
// wrappers (which may count or hold requests).
func setupConfig(cfg *rest.Config) *rest.Config {
	if adminConfig != nil && adminConfig.Host == cfg.Host {
		return adminConfig
	}
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{}
	c.WrapTransport = nil
	return c
}

// Apply applies objs in order with server-side apply (field manager
// FieldManager, forcing conflicts), as a dry run (DryRun: All) if dryRun.
// Unless dryRun, it then waits until the API server's authorizer grants
// every rule that the applied (Cluster)RoleBindings give to ServiceAccounts
// (RBAC takes effect asynchronously).
func Apply(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, dryRun bool) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		body, err := runtime.Encode(unstructured.UnstructuredJSONScheme, o)
		if err != nil {
			return fmt.Errorf("encoding %s %s: %w", gvk.Kind, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			if o.GetNamespace() == "" {
				return fmt.Errorf("%s %s is namespaced but has no namespace", gvk.Kind, o.GetName())
			}
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		} else if o.GetNamespace() != "" {
			return fmt.Errorf("%s %s is cluster-scoped but has namespace %q", gvk.Kind, o.GetName(), o.GetNamespace())
		}
		if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, body, opts); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
	if dryRun {
		return nil
	}
	return waitForRBAC(ctx, cfg, objs)
}

// waitForRBAC waits until every rule each (Cluster)RoleBinding of objs gives
// to a ServiceAccount, through a role of objs, is granted by the authorizer.
func waitForRBAC(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	roles := map[string][]rbacv1.PolicyRule{} // kind/namespace/name -> rules
	var bindings []rbacv1.RoleBinding         // ClusterRoleBindings with an empty namespace
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole", "Role":
			var r rbacv1.Role // a ClusterRole's rules decode the same
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
				return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
			roles[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = r.Rules
		case "ClusterRoleBinding", "RoleBinding":
			var b rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
				return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
			bindings = append(bindings, b)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, b := range bindings {
		roleNS := ""
		if b.RoleRef.Kind == "Role" {
			roleNS = b.Namespace
		}
		rules, ok := roles[b.RoleRef.Kind+"/"+roleNS+"/"+b.RoleRef.Name]
		if !ok {
			continue // a role applied earlier, or not ours
		}
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				continue
			}
			user, groups := ServiceAccountUser(s.Namespace, s.Name)
			for _, attrs := range ruleAttributes(rules, b.Namespace) {
				if err := waitAllowed(ctx, client, user, groups, attrs); err != nil {
					return err
				}
			}
			for _, attrs := range nonResourceAttributes(rules) {
				if err := waitAllowed(ctx, client, user, groups, attrs); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ruleAttributes lists one access check per verb and resource of rules, in
// namespace ns ("" for every namespace).
func ruleAttributes(rules []rbacv1.PolicyRule, ns string) []authorizationv1.SubjectAccessReviewSpec {
	var out []authorizationv1.SubjectAccessReviewSpec
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, v := range r.Verbs {
					out = append(out, authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: ns, Verb: v, Group: g, Resource: resource, Subresource: sub}})
				}
			}
		}
	}
	return out
}

// nonResourceAttributes lists one access check per verb and non-resource
// URL of rules.
func nonResourceAttributes(rules []rbacv1.PolicyRule) []authorizationv1.SubjectAccessReviewSpec {
	var out []authorizationv1.SubjectAccessReviewSpec
	for _, r := range rules {
		for _, path := range r.NonResourceURLs {
			for _, v := range r.Verbs {
				out = append(out, authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: v}})
			}
		}
	}
	return out
}

func waitAllowed(ctx context.Context, client kubernetes.Interface, user string, groups []string, attrs authorizationv1.SubjectAccessReviewSpec) error {
	var last string
	attrs.User, attrs.Groups = user, groups
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: attrs}, metav1.CreateOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = sar.Status.Reason
		return sar.Status.Allowed, nil
	})
	if err != nil {
		if a := attrs.NonResourceAttributes; a != nil {
			return fmt.Errorf("RBAC: %s is not allowed to %s %s: %w (%s)", user, a.Verb, a.Path, err, last)
		}
		a := attrs.ResourceAttributes
		return fmt.Errorf("RBAC: %s is not allowed to %s %s (group %q, subresource %q) in namespace %q: %w (%s)",
			user, a.Verb, a.Resource, a.Group, a.Subresource, a.Namespace, err, last)
	}
	return nil
}

// forbiddenRecorder records the requests the API server refuses with 403
// Forbidden: for a manager running as its ServiceAccount, each one is a
// permission its RBAC lacks.
type forbiddenRecorder struct {
	mu   sync.Mutex
	reqs []string
}

// wrap returns a copy of cfg whose responses are checked (after cfg's own
// WrapTransport, which keeps working as before).
func (f *forbiddenRecorder) wrap(cfg *rest.Config) *rest.Config {
	return Intercept(cfg, func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			r := req.Method + " " + req.URL.Path
			if req.URL.Query().Get("watch") == "true" {
				r += "?watch=true"
			}
			f.mu.Lock()
			f.reqs = append(f.reqs, r)
			f.mu.Unlock()
		}
		return resp, err
	})
}

func (f *forbiddenRecorder) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs...)
}
