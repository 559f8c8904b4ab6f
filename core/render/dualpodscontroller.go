// SPDX-License-Identifier: Apache-2.0

package render

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/third_party/fma"
)

// Kinds of the dual-pods controller's objects.
var (
	KindCustomResourceDefinition         = TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	KindValidatingAdmissionPolicy        = TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"}
	KindValidatingAdmissionPolicyBinding = TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"}
	KindClusterRole                      = TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"}
	KindClusterRoleBinding               = TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"}
)

// Suffixes of the controller's own objects; the CRDs and policies are "fma-{name}".
const (
	suffixFMAServiceAccount     = "fma-serviceaccount"
	suffixFMARole               = "fma-role"
	suffixFMARoleBinding        = "fma-rolebinding"
	suffixFMAClusterRole        = "fma-clusterrole"
	suffixFMAClusterRoleBinding = "fma-clusterrolebinding"
	suffixFMAController         = "dual-pods-controller"
	fmaMetricsPort              = 8002
)

// fmaManifest is one of FMA's CRDs, policies or bindings, parsed once.
type fmaManifest struct {
	TypeMeta
	name   string
	object runtime.Object
}

var (
	fmaManifestsOnce sync.Once
	fmaManifestList  []fmaManifest
	fmaManifestsErr  error
)

// fmaManifests are FMA v0.6.4's CRDs, then its admission policies, then their bindings: the
// order they must be created in. CRDs stay unstructured, as shipped; policies decode strictly
// into the upstream types.
func fmaManifests() ([]fmaManifest, error) {
	fmaManifestsOnce.Do(func() {
		entries, err := fma.Files.ReadDir(".")
		if err != nil {
			fmaManifestsErr = err
			return
		}
		rank := map[TypeMeta]int{KindCustomResourceDefinition: 0, KindValidatingAdmissionPolicy: 1, KindValidatingAdmissionPolicyBinding: 2}
		for _, e := range entries {
			data, err := readGzipped(e.Name())
			if err != nil {
				fmaManifestsErr = err
				return
			}
			m, err := parseFMAManifest(data)
			if err != nil {
				fmaManifestsErr = fmt.Errorf("%s: %w", e.Name(), err)
				return
			}
			fmaManifestList = append(fmaManifestList, m)
		}
		sort.SliceStable(fmaManifestList, func(i, j int) bool {
			a, b := fmaManifestList[i], fmaManifestList[j]
			if rank[a.TypeMeta] != rank[b.TypeMeta] {
				return rank[a.TypeMeta] < rank[b.TypeMeta]
			}
			return a.name < b.name
		})
	})
	return fmaManifestList, fmaManifestsErr
}

func parseFMAManifest(data []byte) (fmaManifest, error) {
	doc, err := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data))).Read()
	if err != nil {
		return fmaManifest{}, err
	}
	var u unstructured.Unstructured
	if err := yaml.Unmarshal(doc, &u.Object); err != nil {
		return fmaManifest{}, err
	}
	kind := TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}
	m := fmaManifest{TypeMeta: kind, name: u.GetName(), object: &u}
	var typed runtime.Object
	switch kind {
	case KindCustomResourceDefinition:
		return m, nil
	case KindValidatingAdmissionPolicy:
		typed = &admissionv1.ValidatingAdmissionPolicy{}
	case KindValidatingAdmissionPolicyBinding:
		typed = &admissionv1.ValidatingAdmissionPolicyBinding{}
	default:
		return m, fmt.Errorf("unexpected kind %s", kind.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, typed); err != nil {
		return m, err
	}
	m.object = typed
	return m, nil
}

// dualPodsControllerRefs lay out FMA's controller, before the LWSs that depend on it: CRDs,
// policies and bindings (cluster-scoped, named as FMA names them), its account and permissions,
// then the controller, which starts once its CRDs and permissions exist.
func dualPodsControllerRefs(svc *api.InferenceService) ([]Ref, error) {
	if !svc.Spec.InstallsDualPodsController() {
		return nil, nil
	}
	manifests, err := fmaManifests()
	if err != nil {
		return nil, fmt.Errorf("FMA's manifests: %w", err)
	}
	var controllerDependsOn []string
	var out []Ref
	policies := map[string]string{} // policy name -> suffix
	for _, m := range manifests {
		ref := Ref{TypeMeta: m.TypeMeta, Name: m.name, Suffix: "fma-" + m.name}
		switch m.TypeMeta {
		case KindCustomResourceDefinition:
			controllerDependsOn = append(controllerDependsOn, ref.Suffix)
		case KindValidatingAdmissionPolicy:
			policies[m.name] = ref.Suffix
		case KindValidatingAdmissionPolicyBinding:
			ref.DependsOn = []string{policies[m.object.(*admissionv1.ValidatingAdmissionPolicyBinding).Spec.PolicyName]}
		}
		out = append(out, ref)
	}
	account, ns := api.FMAServiceAccountName(svc.Name), svc.Namespace
	clusterRole := clusterRoleName(svc)
	out = append(out,
		Ref{TypeMeta: KindServiceAccount, Name: account, Namespace: ns, Suffix: suffixFMAServiceAccount},
		Ref{TypeMeta: KindRole, Name: account, Namespace: ns, Suffix: suffixFMARole},
		Ref{TypeMeta: KindRoleBinding, Name: account, Namespace: ns, Suffix: suffixFMARoleBinding,
			DependsOn: []string{suffixFMAServiceAccount, suffixFMARole}},
		Ref{TypeMeta: KindClusterRole, Name: clusterRole, Suffix: suffixFMAClusterRole},
		Ref{TypeMeta: KindClusterRoleBinding, Name: clusterRole, Suffix: suffixFMAClusterRoleBinding,
			DependsOn: []string{suffixFMAServiceAccount, suffixFMAClusterRole}},
	)
	controller := Ref{TypeMeta: KindDeployment, Name: api.DualPodsControllerName(svc.Name), Namespace: ns, Suffix: suffixFMAController,
		DependsOn: append(controllerDependsOn, suffixFMARoleBinding, suffixFMAClusterRoleBinding),
		Awaited:   svc.Spec.AwaitMode() != api.AwaitNone}
	return append(out, controller), nil
}

// clusterRoleName is unique per service in the cluster: {namespace}-{service}-fma-node-view.
func clusterRoleName(svc *api.InferenceService) string {
	return clusterScopedName(svc, "fma-node-view")
}

// dualPodsControllerObject builds one of the controller's objects.
func dualPodsControllerObject(svc *api.InferenceService, ref Ref) (runtime.Object, error) {
	labels := merged(serviceObjectLabels(svc), map[string]string{LabelAppName: "dual-pods-controller", LabelAppComponent: "fma-controller"})
	meta := metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, Labels: labels}
	account := api.FMAServiceAccountName(svc.Name)
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: svc.Namespace}}
	read := []string{"get", "list", "watch"}
	switch ref.Suffix {
	case suffixFMAServiceAccount:
		return &corev1.ServiceAccount{TypeMeta: typeMeta(KindServiceAccount), ObjectMeta: meta}, nil
	case suffixFMARole:
		// As FMA's chart grants: its CRDs, the gpu-map ConfigMap, and the pods it pairs and makes.
		return &rbacv1.Role{TypeMeta: typeMeta(KindRole), ObjectMeta: meta, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"fma.llm-d.ai"}, Resources: []string{"inferenceserverconfigs", "launcherconfigs", "launcherpopulationpolicies"}, Verbs: read},
			{APIGroups: []string{"fma.llm-d.ai"}, Resources: []string{"launcherconfigs/status", "launcherpopulationpolicies/status"}, Verbs: []string{"patch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		}}, nil
	case suffixFMARoleBinding:
		return &rbacv1.RoleBinding{TypeMeta: typeMeta(KindRoleBinding), ObjectMeta: meta, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: KindRole.Kind, Name: account}}, nil
	case suffixFMAClusterRole:
		return &rbacv1.ClusterRole{TypeMeta: typeMeta(KindClusterRole), ObjectMeta: meta, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: read},
		}}, nil
	case suffixFMAClusterRoleBinding:
		return &rbacv1.ClusterRoleBinding{TypeMeta: typeMeta(KindClusterRoleBinding), ObjectMeta: meta, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: KindClusterRole.Kind, Name: ref.Name}}, nil
	case suffixFMAController:
		return dualPodsController(svc, ref, labels), nil
	}
	manifests, err := fmaManifests()
	if err != nil {
		return nil, fmt.Errorf("FMA's manifests: %w", err)
	}
	for _, m := range manifests {
		if "fma-"+m.name == ref.Suffix {
			return m.object.DeepCopyObject(), nil
		}
	}
	return nil, fmt.Errorf("no dual-pods controller object has the suffix %q", ref.Suffix)
}

func dualPodsController(svc *api.InferenceService, ref Ref, labels map[string]string) *appsv1.Deployment {
	d := svc.Spec.DualPodsController
	selector := map[string]string{LabelService: svc.Name, LabelAppName: "dual-pods-controller"}
	return &appsv1.Deployment{
		TypeMeta:   typeMeta(KindDeployment),
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, Labels: labels, Annotations: skipAwaitUnless(ref.Awaited)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			// One controller at a time pairs requesters with servers.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: api.FMAServiceAccountName(svc.Name),
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name:            "controller",
						Image:           api.FMAImageRepository + "/dual-pods-controller:" + d.VersionOrDefault(),
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command: []string{"/ko-app/dual-pods-controller",
							"--namespace=" + svc.Namespace,
							"--sleeper-limit=" + strconv.Itoa(d.SleeperLimitOrDefault()),
						},
						Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: fmaMetricsPort, Protocol: corev1.ProtocolTCP}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
						}},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

// readGzipped is one of FMA's embedded, gzipped manifests.
func readGzipped(name string) ([]byte, error) {
	file, err := fma.Files.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	unzipped, err := gzip.NewReader(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return io.ReadAll(unzipped)
}
