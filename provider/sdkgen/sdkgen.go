// SPDX-License-Identifier: Apache-2.0

// Package sdkgen generates the TypeScript, Python and Go SDKs of the provider from its schema
// with Pulumi's own code generators (pkg/v3/codegen), without the Pulumi CLI. Kubernetes types
// resolve against the pulumi-kubernetes package schema given as data (third_party/pulumi-kubernetes, v4.32.0).
package sdkgen

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"

	"github.com/blang/semver"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"

	"github.com/fusioninfer/pulumi-fusioninfer/provider"
)

// tool names the generator in the files' headers.
const tool = "fusioninfer-sdkgen"

// Generate returns every SDK file, keyed "nodejs/...", "python/..." and "go/...", for the
// provider's schema at the given version. kubernetesSchema is the pulumi-kubernetes package
// schema file whose types the SDKs refer to.
func Generate(providerSchema []byte, version, kubernetesSchema string) (map[string][]byte, error) {
	var spec schema.PackageSpec
	if err := json.Unmarshal(providerSchema, &spec); err != nil {
		return nil, err
	}
	spec.Version = version
	loader, err := newKubernetesLoader(kubernetesSchema)
	if err != nil {
		return nil, err
	}
	pkg, diags, err := schema.BindSpec(spec, loader, schema.ValidationOptions{})
	if err != nil {
		return nil, err
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("binding the provider's schema: %v", diags)
	}
	files := map[string][]byte{}
	add := func(lang string, generated map[string][]byte, err error) error {
		if err != nil {
			return fmt.Errorf("%s SDK: %w", lang, err)
		}
		for name, data := range generated {
			files[path.Join(lang, name)] = data
		}
		return nil
	}
	generated, err := nodejs.GeneratePackage(tool, pkg, nil, nil, false, loader)
	if err := add("nodejs", generated, err); err != nil {
		return nil, err
	}
	generated, err = python.GeneratePackage(tool, pkg, nil, loader)
	if err := add("python", generated, err); err != nil {
		return nil, err
	}
	generated, err = gogen.GeneratePackage(tool, pkg, nil)
	if err := add("go", generated, err); err != nil {
		return nil, err
	}
	return files, nil
}

// kubernetesLoader serves the kubernetes package from its schema file (whatever version is asked:
// the types this project uses are the same in 4.32 and 4.33) and Pulumi's own package.
type kubernetesLoader struct{ kubernetes *schema.PartialPackage }

func newKubernetesLoader(file string) (*kubernetesLoader, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var spec schema.PartialPackageSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, err
	}
	spec.Version = provider.KubernetesVersion
	l := &kubernetesLoader{}
	if l.kubernetes, err = schema.ImportPartialSpec(spec, nil, l); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *kubernetesLoader) LoadPackageReferenceV2(_ context.Context, d *schema.PackageDescriptor) (schema.PackageReference, error) {
	switch d.Name {
	case "pulumi":
		return schema.DefaultPulumiPackage.Reference(), nil
	case "kubernetes":
		return l.kubernetes, nil
	}
	return nil, fmt.Errorf("package %s: only kubernetes is known", d.Name)
}

func (l *kubernetesLoader) LoadPackageReference(name string, version *semver.Version) (schema.PackageReference, error) {
	return l.LoadPackageReferenceV2(context.Background(), &schema.PackageDescriptor{Name: name, Version: version})
}

func (l *kubernetesLoader) LoadPackageV2(ctx context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	ref, err := l.LoadPackageReferenceV2(ctx, d)
	if err != nil {
		return nil, err
	}
	return ref.Definition()
}

func (l *kubernetesLoader) LoadPackage(name string, version *semver.Version) (*schema.Package, error) {
	return l.LoadPackageV2(context.Background(), &schema.PackageDescriptor{Name: name, Version: version})
}
