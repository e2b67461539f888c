/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// kubeOptions are kubectl's connection flags, and what they make.
type kubeOptions struct {
	kubeconfig string
	context    string
	namespace  string

	// Set by connect, or by tests (envtest).
	config *rest.Config
	c      client.Client
	cs     kubernetes.Interface
	ns     string
}

func (o *kubeOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "the kubeconfig context to use")
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the RolisCluster (default: the context's)")
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = dbv1.AddToScheme(s)
	return s
}

// connect builds the clients from the flags (once).
func (o *kubeOptions) connect() error {
	if o.c != nil {
		if o.ns == "" {
			o.ns = o.namespace
		}
		return nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.kubeconfig != "" {
		rules.ExplicitPath = o.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	ns := o.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return fmt.Errorf("kubeconfig namespace: %w", err)
		}
	}
	return o.use(cfg, ns)
}

// use sets the clients from a rest.Config.
func (o *kubeOptions) use(cfg *rest.Config, ns string) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	o.config, o.c, o.cs, o.ns = cfg, c, cs, ns
	return nil
}

// cluster reads the named RolisCluster.
func (o *kubeOptions) cluster(ctx context.Context, name string) (*dbv1.RolisCluster, error) {
	if err := o.connect(); err != nil {
		return nil, err
	}
	c := &dbv1.RolisCluster{}
	if err := o.c.Get(ctx, types.NamespacedName{Namespace: o.ns, Name: name}, c); err != nil {
		return nil, fmt.Errorf("RolisCluster %s/%s: %w", o.ns, name, err)
	}
	return c, nil
}

func metav1ListOptions(selector string) metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: selector}
}
