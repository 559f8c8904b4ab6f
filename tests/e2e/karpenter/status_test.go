// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package karpenter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// onePod is a service name (in a namespace of that name) of one replica of one pod of gpus GPUs,
// deployed with await none, on a karpenter pool "gpu" whose fields are pool (YAML, after its name).
func onePod(t *testing.T, name string, gpus int, pool string) *api.InferenceService {
	t.Helper()
	return service(t, fmt.Sprintf(`
metadata: {name: %[1]s, namespace: %[1]s}
spec:
  await: none
  nodePools: [{name: gpu, %[3]s}]
  roles:
    - name: chat
      componentType: worker
      nodePool: gpu
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              args: ["--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "%[2]d"]
              resources: {limits: {nvidia.com/gpu: "%[2]d"}}
`, name, gpus, pool))
}

// TestKarpenterStatusNamesWhatKarpenterCannotLaunch: on the real Karpenter, what only Karpenter
// can know (the cloud's shapes and offerings; whether the node class is there) is named by
// `fusioninfer status` from Karpenter's own objects and events: a pod of 16 GPUs on a pool whose
// shapes have 8 or 4, a pool in a zone none of its offerings is in, a pool whose node class does
// not exist. Karpenter v1.8 makes no NodeClaim for these (it finds no instance type before
// launching, and launches nothing for a NodePool that is not ready), so the pool and its pending
// pods carry the cause. The states are recorded as the diagnosis' fixtures.
func TestKarpenterStatusNamesWhatKarpenterCannotLaunch(t *testing.T) {
	for _, tc := range []struct {
		name, service, pool, fixture string
		gpus                         int
		want                         []string
	}{{
		name: "no shape has the GPUs", service: "karpenter-nogpus", fixture: "karpenter-no-instance-type", gpus: 16,
		pool: "gpusPerNode: 16, nodeClassRef: " + kwokClassYAML,
		want: []string{": NoInstanceType: Karpenter finds no instance type of the pool for pod karpenter-nogpus-chat-0-0 " +
			"(16 nvidia.com/gpu on one node): no instance type has enough resources", `resources={"nvidia.com/gpu":"16"`,
			"fix: check the pool's gpusPerNode, instanceTypes, capacityTypes and labels (a zone) against the shapes and offerings the cloud has"},
	}, {
		name: "no offering in the zone", service: "karpenter-nozone", fixture: "karpenter-unknown-zone", gpus: 8,
		pool: "gpusPerNode: 8, labels: {topology.kubernetes.io/zone: zone-c}, nodeClassRef: " + kwokClassYAML,
		want: []string{": NoInstanceType: Karpenter launches nothing for the pool: NodePool requirements filtered out all compatible " +
			"available instance types (its instance types, capacity types and labels, a zone among them, match no offering of the cloud's)"},
	}, {
		name: "no node class", service: "karpenter-noclass", fixture: "karpenter-no-node-class", gpus: 8,
		pool: "gpusPerNode: 8, nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: missing}",
		want: []string{": UnhealthyDependents: Karpenter launches no node for the pool: NodeClassReady=False; NodeClassReady: ",
			"the pool's nodeClassRef must name a node class that exists and is ready"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			svc := onePod(t, tc.service, tc.gpus, tc.pool)
			harness.EnsureNamespace(t, svc.Namespace)
			pool := api.KarpenterNodePoolName(svc.Name, "gpu")
			s := deploy(t, svc)
			s.Up()
			var out string
			var code int
			waitFor(t, 2*time.Minute, "fusioninfer status names why Karpenter launches nothing for "+pool, func() error {
				out, code = harness.Status(t, svc)
				for _, want := range tc.want {
					if !strings.Contains(out, want) {
						return fmt.Errorf("the status lacks %q", want)
					}
				}
				return nil
			})
			assert.Equal(t, 2, code, "not running yet")
			assert.Contains(t, out, "NodePool/"+pool+": ")
			assert.Zero(t, len(nodeClaims(t, pool)), "Karpenter makes no NodeClaim for it")
			harness.RecordFixture(t, svc, tc.fixture)
			s.Destroy()
		})
	}
}
