// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KarpenterVersion is the Karpenter release whose kwok cloud provider launches the nodes.
const KarpenterVersion = "v1.8.0"

var karpenterKwok = binary{"karpenter-kwok", "karpenter", "sigs.k8s.io/karpenter/kwok", KarpenterVersion}

// KWOKNodeClass is the node class every NodePool of the Karpenter e2e tests names: Karpenter's
// kwok provider reads from it only how long a node takes to start (NodeStartupTime).
var KWOKNodeClass = struct{ Group, Kind, Name string }{"karpenter.kwok.sh", "KWOKNodeClass", "default"}

// NodeStartupTime is how long a node Karpenter launches takes to register (the KWOKNodeClass's
// nodeRegistrationDelay, which Karpenter's kwok provider sleeps before it creates the Node:
// kwok/cloudprovider/cloudprovider.go, Create). A GPU instance takes minutes to boot; without the
// delay a node took a second, less than the LWS controller takes to create a replica's workers on
// a loaded machine, and a node could take pods before Karpenter had seen every pod of a
// deployment, which real clusters never see and which leaves Volcano and Karpenter waiting on each
// other (docs/scheduling.md). 20 s is ten times the spread of a deployment's pods under load.
const NodeStartupTime = 20 * time.Second

var kwokNodeClasses = schema.GroupVersionResource{Group: KWOKNodeClass.Group, Version: "v1alpha1", Resource: "kwoknodeclasses"}

// InstanceType is a shape Karpenter's kwok provider may launch, in each zone and capacity type.
type InstanceType struct {
	Name            string
	GPUs, CPUs      int
	Memory          string
	Zones           []string
	CapacityTypes   []string
	OnDemandPerHour float64
}

// GPUInstanceTypes are the shapes the Karpenter e2e tests launch: an 8-GPU and a 4-GPU node,
// in two zones, on demand and spot (at 40% of the price).
var GPUInstanceTypes = []InstanceType{
	{Name: "gpu-8x-h100", GPUs: 8, CPUs: 192, Memory: "2Ti", Zones: []string{"zone-a", "zone-b"},
		CapacityTypes: []string{"on-demand", "spot"}, OnDemandPerHour: 98.32},
	{Name: "gpu-4x-l4", GPUs: 4, CPUs: 48, Memory: "192Gi", Zones: []string{"zone-a", "zone-b"},
		CapacityTypes: []string{"on-demand", "spot"}, OnDemandPerHour: 4.89},
}

// instanceTypesFile writes the shapes in the format of Karpenter's kwok provider
// (kwok/cloudprovider/helpers.go InstanceTypeOptions, read by ConstructInstanceTypes from
// --instance-types-file-path): a name, resources, and offerings, each a price and the zone and
// capacity type it is sold in.
func instanceTypesFile(path string, types []InstanceType) error {
	type requirement struct {
		Key      string   `json:"key"`
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	}
	type offering struct {
		Price        float64       `json:"Price"`
		Available    bool          `json:"Available"`
		Requirements []requirement `json:"Requirements"`
	}
	type options struct {
		Name             string              `json:"name"`
		Offerings        []offering          `json:"offerings"`
		Architecture     string              `json:"architecture"`
		OperatingSystems []string            `json:"operatingSystems"`
		Resources        corev1.ResourceList `json:"resources"`
	}
	var out []options
	for _, t := range types {
		o := options{Name: t.Name, Architecture: "amd64", OperatingSystems: []string{"linux"}, Resources: corev1.ResourceList{
			corev1.ResourceCPU: *resource.NewQuantity(int64(t.CPUs), resource.DecimalSI), corev1.ResourceMemory: resource.MustParse(t.Memory),
			corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": *resource.NewQuantity(int64(t.GPUs), resource.DecimalSI),
		}}
		for _, zone := range t.Zones {
			for _, capacity := range t.CapacityTypes {
				price := t.OnDemandPerHour
				if capacity == "spot" {
					price *= 0.4
				}
				o.Offerings = append(o.Offerings, offering{Price: price, Available: true, Requirements: []requirement{
					{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{capacity}},
					{Key: "topology.kubernetes.io/zone", Operator: "In", Values: []string{zone}},
				}})
			}
		}
		out = append(out, o)
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// startKarpenter runs Karpenter's kwok cloud provider as Karpenter's chart runs its controller,
// but as a process on loopback without leader election: it watches pending pods and the
// NodePools, simulates where they fit, creates NodeClaims and turns each into a node of the
// cheapest fitting shape of GPUInstanceTypes (a kwok node, which kwok makes Ready), and
// consolidates and removes them. The NodePool and NodeClaim CRDs are the project's (Start installs
// them); the KWOKNodeClass CRD and one KWOKNodeClass come from Karpenter's module.
func (c *Cluster) startKarpenter(ctx context.Context) error {
	path, err := karpenterKwok.build()
	if err != nil {
		return err
	}
	if err := c.installModuleCRDs(ctx, karpenterKwok.module, "sigs.k8s.io/karpenter", "kwok/apis/crds"); err != nil {
		return err
	}
	class := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": KWOKNodeClass.Group + "/v1alpha1", "kind": KWOKNodeClass.Kind,
		"metadata": map[string]any{"name": KWOKNodeClass.Name},
		"spec":     map[string]any{"nodeRegistrationDelay": NodeStartupTime.String()},
	}}
	if _, err := c.Dynamic.Resource(kwokNodeClasses).Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the KWOKNodeClass: %w", err)
	}
	types := filepath.Join(c.Dir, "karpenter-instance-types.json")
	if err := instanceTypesFile(types, GPUInstanceTypes); err != nil {
		return err
	}
	metrics, err1 := freePort()
	health, err2 := freePort()
	if err1 != nil || err2 != nil {
		return fmt.Errorf("no free port: %v %v", err1, err2)
	}
	Progress("starting Karpenter %s with its kwok cloud provider", KarpenterVersion)
	cmd := exec.Command(path)
	return c.startCommand("karpenter", cmd, append(os.Environ(),
		"KUBECONFIG="+c.Kubeconfig, "DISABLE_LEADER_ELECTION=true", "SYSTEM_NAMESPACE=kube-system",
		"METRICS_PORT="+strconv.Itoa(metrics), "HEALTH_PROBE_PORT="+strconv.Itoa(health),
		"INSTANCE_TYPES_FILE_PATH="+types, "LOG_LEVEL=debug"))
}
