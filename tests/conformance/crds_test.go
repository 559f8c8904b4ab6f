//go:build conformance

package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdSource is a CRD file inside a Go module (from the module cache) or in this repository (third_party/).
type crdSource struct {
	module string // empty: path is relative to the repository root
	path   string
}

// crdSources are the CRDs of every kind the project emits or refers to, from their upstream sources.
var crdSources = []crdSource{
	{"sigs.k8s.io/lws", "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml"},
	{"sigs.k8s.io/gateway-api-inference-extension", "config/crd/bases/inference.networking.k8s.io_inferencepools.yaml"},
	{"sigs.k8s.io/gateway-api-inference-extension", "config/crd/bases/inference.networking.x-k8s.io_inferencepools.yaml"},
	{"sigs.k8s.io/gateway-api-inference-extension", "config/crd/bases/inference.networking.x-k8s.io_inferenceobjectives.yaml"},
	{"sigs.k8s.io/gateway-api", "config/crd/standard/gateway.networking.k8s.io_httproutes.yaml"},
	{"sigs.k8s.io/karpenter", "pkg/apis/crds/karpenter.sh_nodepools.yaml"},
	{"", "third_party/volcano/scheduling.volcano.sh_podgroups.yaml"},
}

func repositoryRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

// moduleDir is where the Go module cache holds a dependency of this repository.
func moduleDir(module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = repositoryRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// resources maps each installed kind to its resource, so objects can be applied by kind.
type resources map[schema.GroupVersionKind]resourceInfo

type resourceInfo struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// installCRDs creates every CRD and waits until each is Established.
func (c *cluster) installCRDs(ctx context.Context) (resources, error) {
	mapping := resources{
		{Version: "v1", Kind: "Namespace"}: {gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}},
	}
	// The built-in kinds a router emits.
	for gvk, resource := range map[schema.GroupVersionKind]string{
		{Version: "v1", Kind: "ServiceAccount"}:                                  "serviceaccounts",
		{Version: "v1", Kind: "ConfigMap"}:                                       "configmaps",
		{Version: "v1", Kind: "Service"}:                                         "services",
		{Group: "apps", Version: "v1", Kind: "Deployment"}:                       "deployments",
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}:        "roles",
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}: "rolebindings",
	} {
		mapping[gvk] = resourceInfo{gvr: gvk.GroupVersion().WithResource(resource), namespaced: true}
	}
	// The cluster-scoped kinds FMA's controller install emits.
	for gvk, resource := range map[schema.GroupVersionKind]string{
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}:                 "customresourcedefinitions",
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}:        "validatingadmissionpolicies",
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}: "validatingadmissionpolicybindings",
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:                         "clusterroles",
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}:                  "clusterrolebindings",
	} {
		mapping[gvk] = resourceInfo{gvr: gvk.GroupVersion().WithResource(resource)}
	}
	for _, src := range crdSources {
		path := filepath.Join(repositoryRoot(), src.path)
		if src.module != "" {
			dir, err := moduleDir(src.module)
			if err != nil {
				return nil, err
			}
			path = filepath.Join(dir, src.path)
		}
		crds, err := readObjects(path)
		if err != nil {
			return nil, err
		}
		for _, crd := range crds {
			created, err := c.client.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("creating CRD %s from %s: %w", crd.GetName(), path, err)
			}
			group, _, _ := unstructured.NestedString(created.Object, "spec", "group")
			plural, _, _ := unstructured.NestedString(created.Object, "spec", "names", "plural")
			kind, _, _ := unstructured.NestedString(created.Object, "spec", "names", "kind")
			scope, _, _ := unstructured.NestedString(created.Object, "spec", "scope")
			versions, _, _ := unstructured.NestedSlice(created.Object, "spec", "versions")
			for _, v := range versions {
				name := v.(map[string]any)["name"].(string)
				mapping[schema.GroupVersionKind{Group: group, Version: name, Kind: kind}] = resourceInfo{
					gvr:        schema.GroupVersionResource{Group: group, Version: name, Resource: plural},
					namespaced: scope == "Namespaced",
				}
			}
			if err := c.waitEstablished(ctx, crd.GetName()); err != nil {
				return nil, err
			}
			progress("installed CRD %s", crd.GetName())
		}
	}
	return mapping, nil
}

func (c *cluster) waitEstablished(ctx context.Context, name string) error {
	return waitFor(60*time.Second, func() error {
		crd, err := c.client.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conditions {
			m := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("CRD %s is not Established", name)
	})
}

// readObjects reads every object of a multi-document YAML file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objects []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := decoder.Decode(&obj); err != nil {
			if err == io.EOF {
				return objects, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj) > 0 {
			objects = append(objects, &unstructured.Unstructured{Object: obj})
		}
	}
}
