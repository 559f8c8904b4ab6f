// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
)

// routedArgs are story 4 with a router in front.
func routedArgs() *Args {
	a := story4Args()
	a.Roles = append(a.Roles, RoleArgs{Name: "router", ComponentType: "router",
		HTTPRoute: map[string]any{"parentRefs": []any{map[string]any{"name": "inference-gateway"}}}})
	return a
}

// eppOutputs are the outputs of the Endpoint Picker Deployment at a generation, as the
// Deployment controller reports them.
func eppOutputs(generation, observedGeneration, ready int) resource.PropertyMap {
	return resource.PropertyMap{
		"metadata": resource.NewObjectProperty(resource.PropertyMap{
			"name": resource.NewStringProperty("deepseek-r1-disagg-epp"), "generation": resource.NewNumberProperty(float64(generation)),
		}),
		"status": resource.NewObjectProperty(resource.PropertyMap{
			"observedGeneration": resource.NewNumberProperty(float64(observedGeneration)),
			"readyReplicas":      resource.NewNumberProperty(float64(ready)),
		}),
	}
}

func TestRouterChildrenAndOutputs(t *testing.T) {
	cases := []struct {
		name      string
		outputs   resource.PropertyMap
		wantReady bool
	}{
		{"no status yet", nil, false},
		{"a ready Endpoint Picker of the current spec", eppOutputs(2, 2, 1), true},
		{"none ready", eppOutputs(2, 2, 0), false},
		{"the controller has not seen the new spec", eppOutputs(3, 2, 1), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			monitor := &pulumimock.Monitor{Outputs: func(r pulumimock.Resource) resource.PropertyMap {
				if r.Name == "deepseek-r1-disagg-epp-deployment" {
					return tc.outputs
				}
				return nil
			}}
			got := map[string]any{}
			require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
				svc, err := NewInferenceService(ctx, "deepseek-r1-disagg", routedArgs())
				if err != nil {
					return err
				}
				for name, out := range map[string]pulumi.Output{"pool": svc.PoolName, "epp": svc.EndpointPickerServiceName,
					"route": svc.HTTPRouteName, "ready": svc.RouterReady} {
					got[name], _, err = pulumimock.Await(ctx.Context(), out)
					require.NoError(t, err)
				}
				return nil
			}))
			assert.Equal(t, map[string]any{"pool": "deepseek-r1-disagg-pool", "epp": "deepseek-r1-disagg-epp",
				"route": "deepseek-r1-disagg-httproute", "ready": tc.wantReady}, got)

			types := map[string]string{}
			for _, r := range monitor.Resources() {
				if r.Custom {
					types[r.Name] = r.Type
				}
			}
			for name, typ := range map[string]string{
				"deepseek-r1-disagg-epp-serviceaccount": "kubernetes:core/v1:ServiceAccount",
				"deepseek-r1-disagg-epp-role":           "kubernetes:rbac.authorization.k8s.io/v1:Role",
				"deepseek-r1-disagg-epp-rolebinding":    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
				"deepseek-r1-disagg-epp-config":         "kubernetes:core/v1:ConfigMap",
				"deepseek-r1-disagg-epp-deployment":     "kubernetes:apps/v1:Deployment",
				"deepseek-r1-disagg-epp-service":        "kubernetes:core/v1:Service",
				"deepseek-r1-disagg-pool":               "kubernetes:inference.networking.k8s.io/v1:InferencePool",
				"deepseek-r1-disagg-httproute":          "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute",
			} {
				assert.Equal(t, typ, types[name], "%s is registered as the pulumi-kubernetes type of its kind", name)
			}
			role, _ := monitor.Find("deepseek-r1-disagg-epp-role")
			assert.NotEmpty(t, role.Inputs["rules"].Mappable(), "a Role's rules are sent, not only specs")
			route, _ := monitor.Find("deepseek-r1-disagg-httproute")
			pool, _ := monitor.Find("deepseek-r1-disagg-pool")
			assert.Contains(t, route.Dependencies, pool.URN())
		})
	}
}

func TestNoRouterNoRouterOutputs(t *testing.T) {
	monitor := &pulumimock.Monitor{}
	require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
		svc, err := NewInferenceService(ctx, "deepseek-r1-disagg", story4Args())
		if err != nil {
			return err
		}
		pool, _, _ := pulumimock.Await(ctx.Context(), svc.PoolName)
		ready, _, _ := pulumimock.Await(ctx.Context(), svc.RouterReady)
		assert.Equal(t, "", pool)
		assert.Equal(t, false, ready)
		return nil
	}))
}

// A standalone router registers its proxy's ConfigMap and the Service clients call, no
// HTTPRoute, and names none in its outputs.
func TestStandaloneRouterChildrenAndOutputs(t *testing.T) {
	args := routedArgs()
	router := &args.Roles[len(args.Roles)-1]
	router.HTTPRoute = nil
	monitor := &pulumimock.Monitor{}
	var route, request any
	require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
		svc, err := NewInferenceService(ctx, "deepseek-r1-disagg", args)
		if err != nil {
			return err
		}
		if route, _, err = pulumimock.Await(ctx.Context(), svc.HTTPRouteName); err != nil {
			return err
		}
		request, _, err = pulumimock.Await(ctx.Context(), svc.RequestCommand)
		return err
	}))
	assert.Equal(t, "", route, "a standalone router has no HTTPRoute")
	assert.Contains(t, request, "port-forward service/deepseek-r1-disagg-router 23545:8081 & sleep 2; curl -s localhost:23545/v1/completions",
		"the output says where to send requests")
	types := map[string]string{}
	for _, r := range monitor.Resources() {
		if r.Custom {
			types[r.Name] = r.Type
		}
	}
	assert.Equal(t, "kubernetes:core/v1:ConfigMap", types["deepseek-r1-disagg-router-proxy-config"])
	assert.Equal(t, "kubernetes:core/v1:Service", types["deepseek-r1-disagg-router-service"])
	assert.NotContains(t, types, "deepseek-r1-disagg-httproute")
	service, _ := monitor.Find("deepseek-r1-disagg-router-service")
	deployment, _ := monitor.Find("deepseek-r1-disagg-epp-deployment")
	assert.Contains(t, service.Dependencies, deployment.URN(), "clients get the Service once the picker and its proxy are up")
}
