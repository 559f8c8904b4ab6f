// SPDX-License-Identifier: Apache-2.0

package platform

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	manifests "github.com/fusioninfer/pulumi-fusioninfer/third_party/platform"
)

// Object is one object of the platform.
type Object struct {
	// Part is the part it belongs to (PartLeaderWorkerSet, ...).
	Part string
	// Foundation: a Namespace or a CRD, which every other object of the platform is created after.
	Foundation bool
	Object     *unstructured.Unstructured
}

// Key is the object's kind, namespace and name, unique in a platform: "Kind/name" or
// "Kind/namespace/name".
func (o Object) Key() string {
	if ns := o.Object.GetNamespace(); ns != "" {
		return o.Object.GetKind() + "/" + ns + "/" + o.Object.GetName()
	}
	return o.Object.GetKind() + "/" + o.Object.GetName()
}

// The namespaces the upstream manifests install into; their RBAC subjects, webhook services and
// controllers' flags name them.
const (
	LeaderWorkerSetNamespace = "lws-system"
	VolcanoNamespace         = "volcano-system"
	KEDANamespace            = "keda"
)

// LeaderWorkerSetConfigMap is the ConfigMap of the LWS controller's configuration (in
// LeaderWorkerSetNamespace), under the key LeaderWorkerSetConfigKey.
const (
	LeaderWorkerSetConfigMap = "lws-manager-config"
	LeaderWorkerSetConfigKey = "controller_manager_config.yaml"
)

// VolcanoSchedulerConfigMap is the ConfigMap of vc-scheduler's configuration (in
// VolcanoNamespace), under the key VolcanoSchedulerConfigKey.
const (
	VolcanoSchedulerConfigMap = "volcano-scheduler-configmap"
	VolcanoSchedulerConfigKey = "volcano-scheduler.conf"
)

var partFiles = map[string]string{
	PartLeaderWorkerSet:        "lws.yaml.gz",
	PartVolcano:                "volcano.yaml.gz",
	PartInferenceExtension:     "inference-extension.yaml.gz",
	PartGatewayAPI:             "gateway-api.yaml.gz",
	PartKEDA:                   "keda.yaml.gz",
	PartPrometheusOperatorCRDs: "prometheus-operator.yaml.gz",
}

// controllerKinds are the objects of a controller that runs in the cluster, left out when
// Spec.Controllers is false.
var controllerKinds = []string{"Deployment", "Service", "Job", "Secret", "APIService"}

// kindOrder is the order objects are listed in, as Helm installs them: what others refer to first.
var kindOrder = []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "Secret", "ConfigMap",
	"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "Deployment", "Job",
	"APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}

// Render returns the platform's objects, deterministic, in install order (part by part; in a
// part, kindOrder, then as upstream lists them); an invalid spec gives a *ValidationError.
func Render(s *Spec) ([]Object, error) {
	if errs := Validate(s); len(errs) > 0 {
		return nil, &ValidationError{Errors: errs}
	}
	var out []Object
	for _, part := range Parts {
		if !s.Installs(part) {
			continue
		}
		objects, err := readManifest(partFiles[part])
		if err != nil {
			return nil, err
		}
		var kept []Object
		for _, obj := range objects {
			if !s.WithControllers() && slices.Contains(controllerKinds, obj.GetKind()) {
				continue
			}
			if err := configure(s, part, obj); err != nil {
				return nil, err
			}
			kind := obj.GetKind()
			if !slices.Contains(kindOrder, kind) {
				return nil, fmt.Errorf("internal error: %s's manifest has a %s, which the platform does not order", part, kind)
			}
			kept = append(kept, Object{Part: part, Object: obj, Foundation: kind == "Namespace" || kind == "CustomResourceDefinition"})
		}
		slices.SortStableFunc(kept, func(a, b Object) int {
			return slices.Index(kindOrder, a.Object.GetKind()) - slices.Index(kindOrder, b.Object.GetKind())
		})
		out = append(out, kept...)
	}
	seen := map[string]bool{}
	for _, o := range out {
		if seen[o.Key()] {
			return nil, fmt.Errorf("internal error: %s twice in the platform", o.Key())
		}
		seen[o.Key()] = true
	}
	return out, nil
}

// configure sets what the spec says in an upstream object.
func configure(s *Spec, part string, obj *unstructured.Unstructured) error {
	switch {
	case part == PartLeaderWorkerSet && obj.GetKind() == "ConfigMap" && obj.GetName() == LeaderWorkerSetConfigMap:
		upstream, _, _ := unstructured.NestedString(obj.Object, "data", LeaderWorkerSetConfigKey)
		config, err := leaderWorkerSetConfiguration(upstream)
		if err != nil {
			return err
		}
		return unstructured.SetNestedField(obj.Object, config, "data", LeaderWorkerSetConfigKey)
	case part == PartVolcano && obj.GetKind() == "ConfigMap" && obj.GetName() == VolcanoSchedulerConfigMap &&
		s.Volcano != nil && s.Volcano.SchedulerConfiguration != "":
		return unstructured.SetNestedField(obj.Object, s.Volcano.SchedulerConfiguration, "data", VolcanoSchedulerConfigKey)
	}
	return nil
}

// leaderWorkerSetConfiguration is the LWS controller's configuration: upstream's
// (config/manager/controller_manager_config.yaml: leader election, internal certificate
// management) without gangSchedulingManagement, which leaves LWS's gang scheduling off. LWS's
// Volcano provider would give every pod the annotation scheduling.k8s.io/group-name of a PodGroup
// of its own, one per group (pkg/schedulerprovider/volcano_provider.go, InjectPodGroupMetadata),
// taking the pods out of the service's PodGroup, whose subgroups gang the replicas of every role
// together (docs/design/0003-subgroup-podgroup.md, 0021-platform.md).
func leaderWorkerSetConfiguration(upstream string) (string, error) {
	var config map[string]any
	if err := yaml.Unmarshal([]byte(upstream), &config); err != nil || config == nil {
		return "", fmt.Errorf("internal error: LWS's configuration %q: %v", upstream, err)
	}
	delete(config, "gangSchedulingManagement")
	data, err := yaml.Marshal(config)
	return string(data), err
}

// readManifest reads every object of an embedded, gzipped manifest.
func readManifest(name string) ([]*unstructured.Unstructured, error) {
	file, err := manifests.Files.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	unzipped, err := gzip.NewReader(file)
	if err != nil {
		return nil, fmt.Errorf("third_party/platform/%s: %w", name, err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(unzipped, 4096)
	var objects []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return objects, nil
			}
			return nil, fmt.Errorf("third_party/platform/%s: %w", name, err)
		}
		if len(obj) > 0 {
			objects = append(objects, &unstructured.Unstructured{Object: obj})
		}
	}
}

// Versions are the upstream modules and versions the manifests come from, "module@version".
func Versions() []string {
	// The go:embed directive of third_party/platform names versions.txt itself, so a build without
	// it fails; reading an embedded file cannot fail at run time.
	data, _ := manifests.Files.ReadFile("versions.txt")
	return strings.Fields(string(data))
}

// YAML is the objects as one multi-document YAML stream.
func YAML(objects []Object) ([]byte, error) {
	var buf bytes.Buffer
	for _, o := range objects {
		data, err := yaml.Marshal(o.Object.Object)
		if err != nil {
			return nil, err
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	return buf.Bytes(), nil
}
