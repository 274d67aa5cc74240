// Command crpeer is the benchmark's peer: ingress-manager's core behaviour
// written the way most people would write it, with controller-runtime at
// its defaults (one manager, For Service, Owns Ingress, the default cache,
// client, rate limiter and one worker). `make bench` runs it beside the
// real controller-manager, each on its own fresh control plane, and
// reports both.
//
// For every Service annotated ingress/http it keeps an Ingress of the same
// name, controlled by the Service: host example.com, path / (Prefix),
// backend the Service at its first port. It deletes the Ingress it controls
// when the annotation goes, and leaves alone an Ingress it does not control.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const annotationHTTP = "ingress/http"

type reconciler struct {
	client.Client
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var svc corev1.Service
	if err := r.Get(ctx, req.NamespacedName, &svc); err != nil {
		// Deleted: the garbage collector removes the Ingress it owned.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var ing networkingv1.Ingress
	err := r.Get(ctx, req.NamespacedName, &ing)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	exists := err == nil
	if exists && !metav1.IsControlledBy(&ing, &svc) {
		return ctrl.Result{}, nil // not ours
	}
	if _, want := svc.Annotations[annotationHTTP]; !want {
		if exists {
			return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, &ing, client.Preconditions{UID: &ing.UID}))
		}
		return ctrl.Result{}, nil
	}
	desired, err := desiredIngress(&svc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !exists {
		return ctrl.Result{}, client.IgnoreAlreadyExists(r.Create(ctx, desired))
	}
	if equality.Semantic.DeepEqual(ing.Spec, desired.Spec) {
		return ctrl.Result{}, nil
	}
	ing.Spec = desired.Spec
	return ctrl.Result{}, r.Update(ctx, &ing)
}

func desiredIngress(svc *corev1.Service) (*networkingv1.Ingress, error) {
	if len(svc.Spec.Ports) == 0 {
		return nil, fmt.Errorf("service %s/%s has no port", svc.Namespace, svc.Name)
	}
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       svc.Namespace,
			Name:            svc.Name,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))},
		},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: "example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{
					Path:     "/",
					PathType: &prefix,
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: svc.Name,
						Port: networkingv1.ServiceBackendPort{Number: svc.Spec.Ports[0].Port},
					}},
				}},
			}},
		}}},
	}, nil
}

func main() {
	metricsAddr := flag.String("metrics-bind-address", "127.0.0.1:8080", "Address of the metrics endpoint (\"0\": none).")
	namespace := flag.String("namespace", "", "Only watch this namespace (empty: all), as controller-manager's --namespace.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	mgrOpts := ctrl.Options{Metrics: metricsserver.Options{BindAddress: *metricsAddr}}
	if *namespace != "" {
		mgrOpts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{*namespace: {}}}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), mgrOpts)
	if err == nil {
		err = ctrl.NewControllerManagedBy(mgr).
			For(&corev1.Service{}).
			Owns(&networkingv1.Ingress{}).
			Complete(&reconciler{Client: mgr.GetClient()})
	}
	if err == nil {
		err = mgr.Start(ctrl.SetupSignalHandler())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crpeer:", err)
		os.Exit(1)
	}
}
