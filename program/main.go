// SPDX-License-Identifier: Apache-2.0

// Command program is the root Pulumi program (Pulumi.yaml at the repository root): it deploys
// every InferenceService of the manifest file named in stack config, the same file the CLI
// renders.
//
//	pulumi config set manifest examples/manifests/story4-disaggregated-multinode.yaml
//	pulumi config set namespace llm        # optional, for services that name none
//	pulumi up
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

func main() { pulumi.Run(program) }

func program(ctx *pulumi.Context) error {
	cfg := config.New(ctx, "")
	manifest := cfg.Require("manifest")
	path, err := resolve(manifest)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	// Every document is checked, as `fusioninfer render` checks them, before any is registered:
	// a bad later one must not leave an earlier service half-deployed.
	namespace := cfg.Get("namespace")
	trees, sources, problems := render.LoadManifest(manifest, data, func(svc *api.InferenceService) *field.Error {
		if svc.Namespace == "" {
			svc.Namespace = namespace
		}
		return nil
	})
	problems = append(problems, render.Duplicates(trees, sources)...)
	problems = append(problems, oneComponentPerName(trees, sources)...)
	if len(problems) > 0 {
		return fmt.Errorf("%s\n%d problem(s); nothing deployed", strings.Join(problems, "\n"), len(problems))
	}
	statuses := pulumi.Map{}
	for i, tree := range trees {
		svc, err := inferenceservice.NewFromService(ctx, tree.Service.Name, tree.Service, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", sources[i], err)
		}
		statuses[tree.Service.Name] = svc.Status
	}
	ctx.Export("status", statuses)
	return nil
}

// oneComponentPerName: this program registers each service as the component named after the
// service alone (its URN ends ...::fusioninfer:index:InferenceService::{name}, which the stacks
// deployed so far keep), so one name in two namespaces, which kubectl takes as two services, would
// be one URN twice: Pulumi's engine refuses the second ("Duplicate resource URN") after the first
// is registered. Same namespace and name is render.Duplicates' problem, reported there.
func oneComponentPerName(trees []*render.Tree, sources []render.Source) []string {
	first := map[string]int{}
	var problems []string
	for i, tree := range trees {
		j, seen := first[tree.Service.Name]
		switch {
		case !seen:
			first[tree.Service.Name] = i
		case trees[j].Service.Namespace != tree.Service.Namespace:
			problems = append(problems, fmt.Sprintf("%s: the root program deploys each service as the component named after it, and %q in namespace %q would be a second (the first, in namespace %q, at %s); deploy the other namespace's service from a stack of its own, or rename one",
				sources[i], tree.Service.Name, tree.Service.Namespace, trees[j].Service.Namespace, sources[j].Position()))
		}
	}
	return problems
}

// resolve finds the manifest as given, else relative to the project root (the directory of
// Pulumi.yaml), whichever directory Pulumi runs the program from.
func resolve(manifest string) (string, error) {
	if _, err := os.Stat(manifest); err == nil || filepath.IsAbs(manifest) {
		return manifest, err
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "Pulumi.yaml")); err == nil {
			return filepath.Join(dir, manifest), nil
		}
	}
	return "", fmt.Errorf("manifest %q not found", manifest)
}
