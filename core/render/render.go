// SPDX-License-Identifier: Apache-2.0

package render

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/runtime"
)

// bodyFields are the top-level fields of a kind besides apiVersion, kind and metadata.
var bodyFields = map[TypeMeta][]string{
	KindServiceAccount:     nil,
	KindRole:               {"rules"},
	KindRoleBinding:        {"subjects", "roleRef"},
	KindConfigMap:          {"data"},
	KindClusterRole:        {"rules"},
	KindClusterRoleBinding: {"subjects", "roleRef"},
	KindSecret:             {"type"}, // the picker's metrics token: the type is what the token controller fills
}

// BodyFields are the top-level fields an object of the kind carries besides apiVersion, kind and
// metadata ("spec" for most): what a caller must send for it, known before the object is built.
func BodyFields(kind TypeMeta) []string {
	if fields, ok := bodyFields[kind]; ok {
		return fields
	}
	return []string{"spec"}
}

// Unstructured is the object as the plain map a client sends: no status, no null timestamps.
func (o *Object) Unstructured() (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.Kind, o.Name, err)
	}
	delete(m, "status")
	pruneTypedZeroValues(m)
	return m, nil
}

// pruneTypedZeroValues drops what typed structs emit though no one set it: "creationTimestamp:
// null" in every metadata and "resources: {}" in every container. Other empty maps stay: an
// "emptyDir: {}" means something.
func pruneTypedZeroValues(v any) {
	switch t := v.(type) {
	case map[string]any:
		if ts, ok := t["creationTimestamp"]; ok && ts == nil {
			delete(t, "creationTimestamp")
		}
		if r, ok := t["resources"].(map[string]any); ok && len(r) == 0 {
			delete(t, "resources")
		}
		for _, child := range t {
			pruneTypedZeroValues(child)
		}
	case []any:
		for _, child := range t {
			pruneTypedZeroValues(child)
		}
	}
}

// YAML renders the tree as a multi-document YAML stream in apply order.
func (t *Tree) YAML() ([]byte, error) {
	var buf bytes.Buffer
	for i := range t.Objects {
		doc, err := t.Objects[i].YAML()
		if err != nil {
			return nil, err
		}
		buf.WriteString("---\n")
		buf.Write(doc)
	}
	return buf.Bytes(), nil
}

// YAML renders one object as a YAML document (keys sorted, as kubectl prints). The map goes
// straight to the YAML encoder that sigs.k8s.io/yaml uses, without its JSON round trip, which
// cost most of the render time of a large service; the output is the same.
func (o *Object) YAML() ([]byte, error) {
	m, err := o.Unstructured()
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(m)
}
