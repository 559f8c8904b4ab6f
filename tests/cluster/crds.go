// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates every CRD in the files and waits until each is Established; it returns
// them as the server stored them.
func (c *Cluster) InstallCRDs(ctx context.Context, paths ...string) ([]*unstructured.Unstructured, error) {
	var installed []*unstructured.Unstructured
	for _, path := range paths {
		crds, err := ReadObjects(path)
		if err != nil {
			return nil, err
		}
		created, err := c.installCRDObjects(ctx, crds, path)
		if err != nil {
			return nil, err
		}
		installed = append(installed, created...)
	}
	return installed, nil
}

// installCRDObjects creates the CRDs, read from source, and waits until each is Established.
func (c *Cluster) installCRDObjects(ctx context.Context, crds []*unstructured.Unstructured, source string) ([]*unstructured.Unstructured, error) {
	var installed []*unstructured.Unstructured
	for _, crd := range crds {
		created, err := c.Dynamic.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating CRD %s from %s: %w", crd.GetName(), source, err)
		}
		if err := c.waitEstablished(ctx, crd.GetName()); err != nil {
			return nil, err
		}
		installed = append(installed, created)
	}
	return installed, nil
}

func (c *Cluster) waitEstablished(ctx context.Context, name string) error {
	return WaitFor(60*time.Second, func() error {
		crd, err := c.Dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
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

// ReadObjects reads every object of a multi-document YAML file.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
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

// installModuleCRDs installs every CRD file of a folder of a wrapper module's dependency (a
// controller's own CRDs, in the version it runs).
func (c *Cluster) installModuleCRDs(ctx context.Context, module, dependency, folder string) error {
	dir, err := moduleFile(module, dependency, folder)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	_, err = c.InstallCRDs(ctx, files...)
	return err
}

// projectCRD is the CRD file of a kind the project emits or refers to, from its upstream source:
// a dependency of this repository's module or of a wrapper module (from the module cache), or a
// file of the repository.
type projectCRD struct {
	module string // empty: path is relative to the repository root
	path   string
	// wrapper is the folder in modules/ whose dependency module is, when this repository's
	// module cannot depend on it.
	wrapper string
	// ownedBy is the Options field whose controller installs its own version of the CRD instead.
	ownedBy string
}

var projectCRDs = []projectCRD{
	{"sigs.k8s.io/lws", "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml", "", "LeaderWorkerSet"},
	{"sigs.k8s.io/gateway-api-inference-extension", "config/crd/bases/inference.networking.k8s.io_inferencepools.yaml", "", ""},
	{"sigs.k8s.io/gateway-api-inference-extension", "config/crd/bases/inference.networking.x-k8s.io_inferencepools.yaml", "", ""},
	{"sigs.k8s.io/gateway-api-inference-extension", "config/crd/bases/inference.networking.x-k8s.io_inferenceobjectives.yaml", "", ""},
	// GIE v1.5.0's, as the Platform's: its rules' "targets" (v1.2.0's CRD has "split"), which a split's rewrite sets
	{"sigs.k8s.io/gateway-api-inference-extension", "config/crd/bases/inference.networking.x-k8s.io_inferencemodelrewrites.yaml", gieOracleModule, ""},
	{"sigs.k8s.io/gateway-api", "config/crd/standard/gateway.networking.k8s.io_httproutes.yaml", "", ""},
	{"sigs.k8s.io/karpenter", "pkg/apis/crds/karpenter.sh_nodepools.yaml", "", ""},
	{"sigs.k8s.io/karpenter", "pkg/apis/crds/karpenter.sh_nodeclaims.yaml", "", ""},
	{"", "third_party/volcano/scheduling.volcano.sh_podgroups.yaml", "", "Volcano"},
	// KEDA's apis need k8s.io v0.36 (docs/design/0014-autoscaling.md).
	{"github.com/kedacore/keda/v2", "config/crd/bases/keda.sh_scaledobjects.yaml", "keda", "KEDA"},
	{"github.com/prometheus-operator/prometheus-operator", "example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml", "prometheus-operator", ""},
}

// installProjectCRDs installs the CRDs of every kind the project emits or reads, but those a controller
// that runs installed in its own version and those the Platform installed (c.CRDs).
func (c *Cluster) installProjectCRDs(ctx context.Context, opts Options) ([]*unstructured.Unstructured, error) {
	installed := map[string]bool{}
	for _, crd := range c.CRDs {
		installed[crd.GetName()] = true
	}
	var paths []string
	for _, crd := range projectCRDs {
		if (crd.ownedBy == "LeaderWorkerSet" && opts.LeaderWorkerSet) || (crd.ownedBy == "Volcano" && opts.Volcano) ||
			(crd.ownedBy == "KEDA" && opts.KEDA) || installed[crdNameOfFile(crd.path)] {
			continue
		}
		path := filepath.Join(RepositoryRoot(), crd.path)
		if crd.wrapper != "" {
			file, err := moduleFile(crd.wrapper, crd.module, crd.path)
			if err != nil {
				return nil, err
			}
			path = file
		} else if crd.module != "" {
			dir, err := dependencyDir(RepositoryRoot(), crd.module)
			if err != nil {
				return nil, err
			}
			path = filepath.Join(dir, crd.path)
		}
		paths = append(paths, path)
	}
	fromFiles, err := c.InstallCRDs(ctx, paths...)
	if err != nil {
		return nil, err
	}
	var llmd []*unstructured.Unstructured
	for _, crd := range llmdCRDs() {
		if !installed[crd.GetName()] {
			llmd = append(llmd, crd)
		}
	}
	fromPlatform, err := c.installCRDObjects(ctx, llmd, "the Platform")
	return append(fromFiles, fromPlatform...), err
}

// llmdCRDs are llm-d-router's InferenceObjective and InferenceModelRewrite CRDs in llm-d.ai, which
// a router renders its objects in by default: llm-d-router's module, which ships them, is not on
// the module proxy, so they come from the Platform, which makes them from GIE v1.5.0's
// (third_party/platform/update.sh; docs/design/0046-release-0.5.0-the-rewrite-in-its-pickers-group.md).
func llmdCRDs() []*unstructured.Unstructured {
	objects, err := platform.Render(&platform.Spec{})
	if err != nil {
		panic(fmt.Sprintf("the Platform renders: %v", err))
	}
	var crds []*unstructured.Unstructured
	for _, o := range objects {
		if group, _, _ := unstructured.NestedString(o.Object.Object, "spec", "group"); o.Object.GetKind() == "CustomResourceDefinition" && group == eppconfig.GroupLLMD {
			crds = append(crds, o.Object)
		}
	}
	return crds
}

// crdNameOfFile is the name of the CRD in a file named as controller-gen names them,
// "{group}_{plural}.yaml": "{plural}.{group}".
func crdNameOfFile(path string) string {
	group, plural, _ := strings.Cut(strings.TrimSuffix(filepath.Base(path), ".yaml"), "_")
	return plural + "." + group
}

// RepositoryRoot is the root of this repository.
func RepositoryRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}
