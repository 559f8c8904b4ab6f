package topology

import (
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
)

// LoadManifest decodes, validates and builds every service of one manifest (file names it in
// messages), for every front door that reads manifests: the CLI and the root Pulumi program.
// adjust, when given, sets what the caller decides of each decoded service (its namespace) before
// it is built, and may refuse it with an error at a field path. Problems come in line order, each
// "file:line: ..." at the line of the field it names; sources[i] is where trees[i]'s service is.
func LoadManifest(file string, data []byte, adjust func(*api.InferenceService) *field.Error) (trees []*Tree, sources, problems []string) {
	type problem struct {
		line int
		text string
	}
	var found []problem
	docs, errs := api.Decode(data)
	for _, err := range errs {
		var decodeErr *api.DecodeError
		if !errors.As(err, &decodeErr) {
			found = append(found, problem{0, fmt.Sprintf("%s: %v", file, err)})
			continue
		}
		for _, p := range decodeErr.Problems {
			found = append(found, problem{p.Line, fmt.Sprintf("%s:%d: %s", file, p.Line, p.Message)})
		}
	}
	for _, doc := range docs {
		svc := doc.Service
		service := fmt.Sprintf("InferenceService %q", svc.Name)
		if adjust != nil {
			if err := adjust(svc); err != nil {
				line := doc.LineOf(err.Field)
				found = append(found, problem{line, fmt.Sprintf("%s:%d: %s: %v", file, line, service, err)})
				continue
			}
		}
		tree, verrs := Build(svc)
		for _, e := range verrs {
			line := doc.LineOf(e.Field)
			found = append(found, problem{line, fmt.Sprintf("%s:%d: %s: %v", file, line, service, e)})
		}
		if tree != nil {
			trees = append(trees, tree)
			sources = append(sources, fmt.Sprintf("%s:%d: %s", file, doc.Line, service))
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].line < found[j].line })
	for _, p := range found {
		problems = append(problems, p.text)
	}
	return trees, sources, problems
}

// DuplicateObjects: objects of different services that would be the same Kubernetes object but
// differ (one service "a" with role "b-c", another "a-b" with role "c": two LeaderWorkerSets
// a-b-c-0), each named with the two services it comes from (sources, as LoadManifest gives
// them). Identical ones (the CRDs two services that install FMA's controller both carry) are the
// same object applied twice, and pass.
func DuplicateObjects(trees []*Tree, sources []string) []string {
	type identity struct{ apiVersion, kind, namespace, name string }
	type firstSeen struct {
		tree   int
		object runtime.Object
	}
	first := map[identity]firstSeen{}
	var problems []string
	for i, tree := range trees {
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
