// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// LoadManifest decodes, validates and builds every service of one manifest (file names it in
// messages), for every front door that reads manifests: the CLI and the root Pulumi program.
// adjust, when given, sets what the caller decides of each decoded service (its namespace) before
// it is built, and may refuse it with an error at a field path. Problems come in line order, each
// "file:line: ..." at the line of the field it names; sources[i] is where trees[i]'s service is.
func LoadManifest(file string, data []byte, adjust func(*api.InferenceService) *field.Error) (trees []*Tree, sources []Source, problems []string) {
	type problem struct {
		line int
		text string
	}
	var found []problem
	for _, doc := range api.DecodeEach(data) {
		if doc.Problems != nil {
			for _, p := range doc.Problems.Problems {
				found = append(found, problem{p.Line, fmt.Sprintf("%s:%d: %s", file, p.Line, p.Message)})
			}
		}
		svc := doc.Service
		if svc == nil {
			continue
		}
		service := fmt.Sprintf("InferenceService %q", svc.Name)
		if adjust != nil {
			if err := adjust(svc); err != nil {
				line := doc.LineOf(err.Field)
				found = append(found, problem{line, fmt.Sprintf("%s:%d: %s: %v", file, line, service, err)})
				continue
			}
		}
		// A document with decoding problems is validated for the rules the rest of it breaks,
		// all reported at once, and never built.
		tree, verrs := Build(svc)
		for _, e := range verrs {
			if doc.LeftOut(e.Field) {
				continue
			}
			line := doc.LineOf(e.Field)
			found = append(found, problem{line, fmt.Sprintf("%s:%d: %s: %v", file, line, service, e)})
		}
		if tree != nil && doc.Problems == nil {
			trees = append(trees, tree)
			sources = append(sources, Source{File: file, Line: doc.Line, Service: svc.Name})
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].line < found[j].line })
	for _, p := range found {
		problems = append(problems, p.text)
	}
	return trees, sources, problems
}

// Source is where a service of a manifest is: its file and the line its document starts at.
type Source struct {
	File    string
	Line    int
	Service string
}

// Position is "file:line".
func (s Source) Position() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// String is "file:line: InferenceService "name"", as problems begin.
func (s Source) String() string {
	return fmt.Sprintf("%s: InferenceService %q", s.Position(), s.Service)
}

// Duplicates are what services rendered or deployed together would both claim, each problem at
// the later service naming the earlier (sources, as LoadManifest gives them):
//
//   - two services of one namespace and name, even identical: the second would be applied over
//     the first, and the root program would register the component twice, which Pulumi's engine
//     refuses at the second ("Duplicate resource URN ...::fusioninfer:index:InferenceService::svc",
//     pkg/resource/deploy/step_generator.go, generateURN) after the first is registered;
//   - objects of different services that would be the same Kubernetes object but differ (one
//     service "a" with role "b-c", another "a-b" with role "c": two LeaderWorkerSets a-b-c-0).
//     Identical ones (the CRDs two services that install FMA's controller both carry) are the
//     same object applied twice, and pass.
func Duplicates(trees []*Tree, sources []Source) []string {
	type serviceID struct{ namespace, name string }
	firstService := map[serviceID]int{}
	var problems []string
	repeated := make([]bool, len(trees)) // a service given again: its objects are the first's
	for i, tree := range trees {
		id := serviceID{tree.Service.Namespace, tree.Service.Name}
		j, seen := firstService[id]
		if !seen {
			firstService[id] = i
			continue
		}
		repeated[i] = true
		problems = append(problems, fmt.Sprintf("%s: a second service %q in namespace %q (the first at %s); give each service once: remove one, or rename one",
			sources[i], id.name, id.namespace, sources[j].Position()))
	}
	type identity struct{ apiVersion, kind, namespace, name string }
	type firstSeen struct {
		tree   int
		object runtime.Object
	}
	first := map[identity]firstSeen{}
	for i, tree := range trees {
		if repeated[i] {
			continue
		}
		for _, obj := range tree.Objects {
			id := identity{obj.APIVersion, obj.Kind, obj.Namespace, obj.Name}
			seenAs, seen := first[id]
			j := seenAs.tree
			switch {
			case !seen:
				first[id] = firstSeen{i, obj.Object}
			case j != i && !equality.Semantic.DeepEqual(seenAs.object, obj.Object):
				problems = append(problems, fmt.Sprintf("%s: %s %s/%s is also an object of %s; rename one of the services or roles",
					sources[i], obj.Kind, obj.Namespace, obj.Name, sources[j]))
			}
		}
	}
	return problems
}
