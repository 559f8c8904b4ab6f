// Package provider hosts the InferenceService component in the multi-language provider
// pulumi-resource-fusioninfer, built with pulumi-go-provider's infer: TypeScript, Python and YAML
// programs construct the same Go component the Go programs call.
package provider

import (
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
)

// Name is the provider's package name.
const Name = "fusioninfer"

// New is the provider.
func New() (p.Provider, error) {
	prov, err := infer.NewProviderBuilder().
		WithNamespace(Name).
		WithDisplayName("FusionInfer").
		WithDescription("LLM inference on Kubernetes: LeaderWorkerSets, Volcano gang scheduling, the Gateway API Inference Extension.").
		WithLicense("Apache-2.0").
		WithRepository("https://github.com/fusioninfer/pulumi-fusioninfer").
		// The Go package is inferenceservice; its token is fusioninfer:index:InferenceService.
		WithModuleMap(map[tokens.ModuleName]tokens.ModuleName{"inferenceservice": "index", "provider": "index", "api": "index"}).
		WithLanguageMap(map[string]any{
			"go": map[string]any{
				"importBasePath": "github.com/fusioninfer/pulumi-fusioninfer/sdk/go/fusioninfer", "generateResourceContainerTypes": true,
				"respectSchemaVersion": true,
			},
			"nodejs": map[string]any{"packageName": "@fusioninfer/pulumi-fusioninfer", "respectSchemaVersion": true},
			"python": map[string]any{"packageName": "pulumi_fusioninfer", "pyproject": map[string]any{"enabled": true}, "respectSchemaVersion": true},
		}).
		WithComponents(infer.ComponentF(construct)).
		Build()
	if err != nil {
		return p.Provider{}, err
	}
	return withKubernetesReferences(prov), nil
}

func construct(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*inferenceservice.InferenceService, error) {
	componentArgs, err := args.componentArgs()
	if err != nil {
		return nil, err
	}
	return inferenceservice.NewInferenceService(ctx, name, componentArgs, opts...)
}
