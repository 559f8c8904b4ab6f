// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"os"
	"os/exec"
)

// providerModule is the module of pulumi-kubernetes' provider, whose package schema the
// provider serves (modules/pulumi-kubernetes/main.go reads it).
const providerModule = "github.com/pulumi/pulumi-kubernetes/provider/v4"

// KubernetesProvider is the real pulumi-kubernetes provider's plugin process for an engine whose
// host service is at engine, as the engine runs it (`pulumi-resource-kubernetes <engine>`),
// talking to this cluster through its kubeconfig, as a provider with no kubeconfig of its own
// configured does.
func (c *Cluster) KubernetesProvider(engine string) (*exec.Cmd, error) {
	path, err := kubernetesProvider.build()
	if err != nil {
		return nil, err
	}
	schema, err := moduleFile(kubernetesProvider.module, providerModule, "cmd/pulumi-resource-kubernetes/schema.json")
	if err != nil {
		return nil, err
	}
	mapping, err := moduleFile(kubernetesProvider.module, providerModule, "cmd/pulumi-resource-kubernetes/terraform-mapping.json")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, engine)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig,
		"PULUMI_KUBERNETES_SCHEMA="+schema, "PULUMI_KUBERNETES_TERRAFORM_MAPPING="+mapping)
	if cmd.Stderr, err = os.CreateTemp(c.Dir, "pulumi-resource-kubernetes-*.log"); err != nil {
		return nil, err
	}
	return cmd, nil
}
