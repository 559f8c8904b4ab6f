// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

// The simulated cluster installs the prerequisites the way a user does, through the Platform
// component's core (core/platform, what `fusioninfer platform render` prints), without the
// controllers' own Deployments, Services and Secrets (Spec.Controllers false): the controllers
// run here as processes on loopback. Everything else is the Platform's: the CRDs, namespaces,
// RBAC, the LWS controller's configuration, Volcano's scheduler configuration and LWS's webhook
// configurations (pointed at the process). Each controller runs as its ServiceAccount (an
// impersonating kubeconfig), so the RBAC the Platform installs is what it is allowed to do.
//
// Left out, because the e2e does not run them: Volcano's admission webhooks
// (vc-webhook-manager) and KEDA's (keda-admission-webhooks); their configurations would send
// every request they match to a server that is not there.

// WholePlatform is every part of the Platform, the optional ones too: what Options.Platform
// installs and tests/conformance/platform holds to the API server.
func WholePlatform() *platform.Spec {
	on := true
	return &platform.Spec{GatewayAPI: &platform.OptionalPart{Install: &on}}
}

// platformSpec is what the cluster installs through the Platform for opts: what docs/install.md's
// command installs (TestInstallIsWhatTheE2EInstalls); the HTTPRoute CRD comes from projectCRDs.
func platformSpec(opts Options) *platform.Spec {
	off := false
	part := func(install bool) *platform.Part {
		if install {
			return nil
		}
		return &platform.Part{Install: &off}
	}
	spec := &platform.Spec{
		// LWS v0.8.0 (LeaderWorkerSetVersion) is not the Platform's: its CRDs and webhooks come
		// from its module (startLeaderWorkerSet).
		LeaderWorkerSet: part(opts.LeaderWorkerSet && platformLWS(opts)),
		KEDA:            part(opts.KEDA),
		Controllers:     &off,
	}
	if !opts.Volcano {
		spec.Volcano = &platform.VolcanoPart{Install: &off}
	}
	return spec
}

// platformLWS says whether the LWS controller that runs is the Platform's version.
func platformLWS(opts Options) bool {
	return opts.LeaderWorkerSetVersion == "" || opts.LeaderWorkerSetVersion == LWSVersion
}

// usesPlatform says whether Start installs through the Platform: the e2e suites' clusters, which
// run a controller. The conformance suite's bare API server installs the upstream CRDs alone.
func usesPlatform(opts Options) bool { return opts.LeaderWorkerSet || opts.Volcano || opts.KEDA }

// skippedWebhook says whether an object is a webhook configuration of a server the cluster does
// not run.
func skippedWebhook(o platform.Object) bool {
	kind := o.Object.GetKind()
	return (kind == "MutatingWebhookConfiguration" || kind == "ValidatingWebhookConfiguration") &&
		o.Part != platform.PartLeaderWorkerSet
}

// installPlatform creates the Platform's objects of spec but those skip says, the CRDs waited
// for until Established, and keeps them in c.platform (LWS's webhook configurations wait for its
// webhook server: installLeaderWorkerSetWebhooks).
func (c *Cluster) installPlatform(ctx context.Context, spec *platform.Spec, skip func(platform.Object) bool) error {
	objects, err := platform.Render(spec)
	if err != nil {
		return err
	}
	c.platform = objects
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(c.Config)))
	Progress("installing the Platform (%d objects)", len(objects))
	for _, o := range objects {
		if skip(o) {
			continue
		}
		if err := c.create(ctx, mapper, o.Object); err != nil {
			return err
		}
		if o.Object.GetKind() == "CustomResourceDefinition" {
			if err := c.waitEstablished(ctx, o.Object.GetName()); err != nil {
				return err
			}
			stored, err := c.Dynamic.Resource(crdResource).Get(ctx, o.Object.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			c.CRDs = append(c.CRDs, stored)
			mapper.Reset()
		}
	}
	return nil
}

// processControllers: what the e2e cluster does not install of its Platform, whose controllers
// run as processes: the webhook configurations of servers it does not run, and LWS's until its
// server is up.
func processControllers(o platform.Object) bool {
	return skippedWebhook(o) || isLeaderWorkerSetWebhook(o)
}

// Platform is what Start installed through the Platform's core.
func (c *Cluster) Platform() []platform.Object { return c.platform }

func isLeaderWorkerSetWebhook(o platform.Object) bool {
	return o.Part == platform.PartLeaderWorkerSet &&
		(o.Object.GetKind() == "MutatingWebhookConfiguration" || o.Object.GetKind() == "ValidatingWebhookConfiguration")
}

// create creates an object of any kind; one that exists already (a namespace another step made) is kept.
func (c *Cluster) create(ctx context.Context, mapper meta.RESTMapper, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	resource := c.Dynamic.Resource(mapping.Resource)
	var creator interface {
		Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
	} = resource
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		creator = resource.Namespace(obj.GetNamespace())
	}
	if _, err := creator.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the Platform's %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// platformConfig is a key of the data of one of the Platform's ConfigMaps, as the cluster stores
// it: what the controller would mount.
func (c *Cluster) platformConfig(ctx context.Context, namespace, name, key string) (string, error) {
	cm, err := c.Clientset.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("the Platform's ConfigMap %s/%s: %w", namespace, name, err)
	}
	value, ok := cm.Data[key]
	if !ok {
		return "", fmt.Errorf("the Platform's ConfigMap %s/%s has no %s", namespace, name, key)
	}
	return value, nil
}

// installLeaderWorkerSetWebhooks creates the Platform's LWS webhook configurations, calling url
// (the process) with caPEM instead of the in-cluster Service and its certificate.
func (c *Cluster) installLeaderWorkerSetWebhooks(ctx context.Context, url string, caPEM []byte) error {
	var configs []*unstructured.Unstructured
	for _, o := range c.platform {
		if isLeaderWorkerSetWebhook(o) {
			configs = append(configs, o.Object.DeepCopy())
		}
	}
	return c.createWebhooks(ctx, configs, url, caPEM)
}

// serviceAccountKubeconfig writes a kubeconfig that acts as a ServiceAccount (the API server
// adds its groups), so a controller process gets exactly the RBAC the Platform gave its account.
func (c *Cluster) serviceAccountKubeconfig(namespace, name string) (string, error) {
	data, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		return "", err
	}
	account := "system:serviceaccount:" + namespace + ":" + name
	text := strings.Replace(string(data), "user: {token:", fmt.Sprintf("user: {as: %q, token:", account), 1)
	if text == string(data) {
		return "", fmt.Errorf("internal error: the kubeconfig has no user to impersonate with")
	}
	path := filepath.Join(c.Dir, "kubeconfig-"+namespace+"-"+name)
	// Two pods of one account start at once: written in place, one process could read the
	// other's truncated file ("no configuration has been provided") and never start. A rename
	// replaces it whole.
	file, err := os.CreateTemp(c.Dir, ".kubeconfig-*")
	if err != nil {
		return "", err
	}
	if _, err := file.WriteString(text); err != nil {
		file.Close()
		return "", err
	}
	if err := file.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(file.Name(), path)
}
