// SPDX-License-Identifier: Apache-2.0

// Package provider hosts the InferenceService component in the multi-language provider
// pulumi-resource-fusioninfer, built with pulumi-go-provider's infer: TypeScript, Python and YAML
// programs construct the same Go component the Go programs call.
package provider

import (
	"context"
	"fmt"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	comProvider "github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"

	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/components/platform"
)

// Name is the provider's package name.
const Name = "fusioninfer"

// New is the provider: infer's, with the schema rewritten (withKubernetesReferences) and its own
// Construct (constructFromRawInputs), which infer cannot give (design 0011, 0012; each reason is
// pinned by a test in sdkedges_test.go that fails when a Pulumi upgrade removes it).
func New() (p.Provider, error) {
	prov, err := inferred()
	if err != nil {
		return p.Provider{}, err
	}
	prov = withKubernetesReferences(prov)
	prov.Construct = constructFromRawInputs
	return prov, nil
}

// inferred is the provider as infer builds it from the components' Go types.
func inferred() (p.Provider, error) {
	return infer.NewProviderBuilder().
		WithNamespace(Name).
		WithDisplayName("FusionInfer").
		WithDescription("LLM inference on Kubernetes: LeaderWorkerSets, Volcano gang scheduling, the Gateway API Inference Extension.").
		WithLicense("Apache-2.0").
		// The SDKs name where Pulumi downloads the plugin: the GitHub release of their version (make release).
		WithPluginDownloadURL("github://api.github.com/fusioninfer/pulumi-fusioninfer").
		WithRepository("https://github.com/fusioninfer/pulumi-fusioninfer").
		// The Go package is inferenceservice; its token is fusioninfer:index:InferenceService.
		WithModuleMap(map[tokens.ModuleName]tokens.ModuleName{"inferenceservice": "index", "provider": "index", "api": "index",
			"platformcomponent": "index", "platform": "index"}).
		WithLanguageMap(map[string]any{
			"go": map[string]any{
				"importBasePath": "github.com/fusioninfer/pulumi-fusioninfer/sdk/go/fusioninfer", "generateResourceContainerTypes": true,
				"respectSchemaVersion": true,
			},
			// The Node SDK asks for the same Pulumi SDK floor as the Python one (pulumi's Python codegen
			// writes >=3.231.0,<4.0.0; its Node codegen would write ^3.142.0, MinimumValidSDKVersion in
			// pkg/codegen/nodejs/gen.go), the floor README names. Both ask the same of pulumi-kubernetes
			// (kubernetesRequirement).
			"nodejs": map[string]any{"packageName": "@fusioninfer/pulumi-fusioninfer", "respectSchemaVersion": true,
				"dependencies": map[string]string{"@pulumi/pulumi": "^3.231.0", "@pulumi/kubernetes": kubernetesRequirement.npm()}},
			"python": map[string]any{"packageName": "pulumi_fusioninfer", "pyproject": map[string]any{"enabled": true}, "respectSchemaVersion": true,
				"requires": map[string]string{"pulumi_kubernetes": kubernetesRequirement.pip()}},
		}).
		WithComponents(infer.ComponentF(construct), infer.ComponentF(constructPlatform)).
		Build()
}

// construct gives infer the component's schema (its Args and outputs); the provider's Construct is
// constructFromRawInputs, which decodes the inputs itself.
func construct(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*inferenceservice.InferenceService, error) {
	return nil, fmt.Errorf("InferenceService %q: constructed through constructFromRawInputs", name)
}

// constructPlatform gives infer the Platform's schema; constructFromRawInputs constructs it.
func constructPlatform(ctx *pulumi.Context, name string, args platform.Args, opts ...pulumi.ResourceOption) (*platform.Platform, error) {
	//lint:ignore ST1005 the errors name the kind of what they refuse first, a proper noun
	return nil, fmt.Errorf("Platform %q: constructed through constructFromRawInputs", name)
}

// constructFromRawInputs constructs the component from the inputs as the engine sent them, so
// that nothing is lost between a TypeScript, Python or YAML program and the Go component: the
// spec goes through the manifest's strict decoding, the pod templates keep nested unknowns
// (decodeInputs).
func constructFromRawInputs(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
	if req.Urn.Type() == platform.TypeToken {
		return p.ProgramConstruct(ctx, req, func(pctx *pulumi.Context, _, name string, _ comProvider.ConstructInputs, opts pulumi.ResourceOption) (*comProvider.ConstructResult, error) {
			spec, err := platformSpecOf(req.Inputs)
			if err != nil {
				//lint:ignore ST1005 the errors name the kind of what they refuse first, a proper noun
				return nil, fmt.Errorf("Platform %q: %w", name, err)
			}
			component, err := platform.NewPlatform(pctx, name, &platform.Args{Spec: *spec}, opts)
			if err != nil {
				return nil, err
			}
			return comProvider.NewConstructResult(component)
		})
	}
	if req.Urn.Type() != inferenceservice.TypeToken {
		return p.ConstructResponse{}, fmt.Errorf("unknown component type %s", req.Urn.Type())
	}
	return p.ProgramConstruct(ctx, req, func(pctx *pulumi.Context, _, name string, inputs comProvider.ConstructInputs, opts pulumi.ResourceOption) (*comProvider.ConstructResult, error) {
		svc, templates, err := decodeInputs(pctx, name, req.Inputs, inputs)
		if err != nil {
			return nil, inSDKNames(err)
		}
		component, err := inferenceservice.NewFromService(pctx, name, svc, templates, opts)
		if err != nil {
			return nil, inSDKNames(err)
		}
		return comProvider.NewConstructResult(component)
	})
}
