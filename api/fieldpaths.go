// SPDX-License-Identifier: Apache-2.0

package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/agext/levenshtein"
	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Where a decoding problem is: the field path of a value of the wrong type (JSON decoding reports
// it without list indexes), the field names a misspelt one was probably meant to be, and the
// manifest line of any field path. All three read paths in field.Path's form,
// "spec.roles[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]".

// pathSegments splits a field path into its names, indexes and keys.
func pathSegments(path string) []string {
	var segments []string
	for len(path) > 0 {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(segments, path[1:])
			}
			segments = append(segments, path[1:end])
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segments = append(segments, path[:end])
			path = path[end:]
		}
	}
	return segments
}

// withoutIndexes is a field path as encoding/json names a field: its names and map keys,
// dot-separated, without list indexes.
func withoutIndexes(path string) string {
	var names []string
	for _, segment := range pathSegments(path) {
		if _, err := strconv.Atoi(segment); err != nil {
			names = append(names, segment)
		}
	}
	return strings.Join(names, ".")
}

// jsonFields are a struct type's fields by their JSON names, with those of inlined (embedded)
// structs, as encoding/json sees them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := indirect(f.Type)
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct || strings.Contains(opts, "inline") {
			for n, inner := range jsonFields(ft) {
				fields[n] = inner
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// withoutEmbedded is a field path as encoding/json names a field of the wrong type, less the Go
// names of the embedded structs it passes through, which a manifest does not write
// ("readinessProbe.ProbeHandler.exec" is "readinessProbe.exec").
func withoutEmbedded(root reflect.Type, path string) string {
	t := root
	var names []string
	for _, segment := range strings.Split(path, ".") {
		for t != nil && (indirect(t).Kind() == reflect.Slice || indirect(t).Kind() == reflect.Array) {
			t = indirect(t).Elem() // the path has no list indexes: a name after a list is its element's
		}
		if t != nil && indirect(t).Kind() == reflect.Struct {
			if f, ok := indirect(t).FieldByName(segment); ok && f.Anonymous && jsonName(f) == "" {
				t = f.Type
				continue
			}
		}
		names = append(names, segment)
		t, _ = child(t, segment)
	}
	return strings.Join(names, ".")
}

// jsonName is the name a struct field's tag gives it, "" for none.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

func indirect(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// child is the type of segment within t: a struct's field, a list's or map's element.
func child(t reflect.Type, segment string) (reflect.Type, bool) {
	if t == nil {
		return nil, false
	}
	switch t = indirect(t); t.Kind() {
	case reflect.Struct:
		ft, ok := jsonFields(t)[segment]
		return ft, ok
	case reflect.Slice, reflect.Array, reflect.Map:
		return t.Elem(), true
	}
	return nil, false
}

// didYouMean is the known field nearest to the unknown one at path, under the type root: a
// hint when the names are close (an edit or two, or a third of the name), else "".
func didYouMean(root reflect.Type, path string) string {
	segments := pathSegments(path)
	if len(segments) == 0 {
		return ""
	}
	t := root
	for _, segment := range segments[:len(segments)-1] {
		var ok bool
		if t, ok = child(t, segment); !ok {
			return ""
		}
	}
	if t = indirect(t); t.Kind() != reflect.Struct {
		return ""
	}
	unknown := segments[len(segments)-1]
	best, bestDistance := "", max(2, len(unknown)/3)+1
	for name := range jsonFields(t) {
		distance := levenshtein.Distance(strings.ToLower(unknown), strings.ToLower(name), nil)
		if distance < bestDistance || distance == bestDistance && name < best {
			best, bestDistance = name, distance
		}
	}
	return best
}

// valuePathAt is the field path of the JSON value that ends at offset (where encoding/json
// reports a value of the wrong type), with list indexes, and map keys or struct fields as root's
// types have them; "" if no value ends there.
func valuePathAt(jsonData []byte, offset int64, root reflect.Type) string {
	found := ""
	jsonWalk{afterToken: func(dec *json.Decoder, path *field.Path) bool {
		if dec.InputOffset() < offset {
			return false
		}
		if path != nil {
			found = path.String()
		}
		return true
	}}.walk(json.NewDecoder(bytes.NewReader(jsonData)), nil, root)
	return found
}

// jsonWalk reads a JSON value and every value it holds, in document order, each with its field
// path (list indexes; map keys or struct fields as the types under the root have them) and its
// type (nil where the types say nothing).
type jsonWalk struct {
	// beforeValue, if set, is called before each value but the root is read; it may read the
	// value itself (read), or end the walk (stop).
	beforeValue func(dec *json.Decoder, path *field.Path, t reflect.Type) (read, stop bool)
	// afterToken, if set, is called once a value's first token is read; true ends the walk.
	afterToken func(dec *json.Decoder, path *field.Path) bool
}

// walk reads one value at path, of type t, and what it holds; true when the walk ended (a hook
// ended it, or the JSON did).
func (w jsonWalk) walk(dec *json.Decoder, path *field.Path, t reflect.Type) bool {
	if w.beforeValue != nil && path != nil {
		if read, stop := w.beforeValue(dec, path, t); stop || read {
			return stop
		}
	}
	token, err := dec.Token()
	if err != nil {
		return true
	}
	if w.afterToken != nil && w.afterToken(dec, path) {
		return true
	}
	switch token {
	case json.Delim('{'):
		for dec.More() {
			key, err := dec.Token()
			name, ok := key.(string)
			if err != nil || !ok {
				return true
			}
			childPath := path.Child(name)
			if t != nil && indirect(t).Kind() == reflect.Map {
				childPath = path.Key(name)
			}
			ct, _ := child(t, name)
			if w.walk(dec, childPath, ct) {
				return true
			}
		}
		_, err := dec.Token() // the closing brace
		return err != nil
	case json.Delim('['):
		et, _ := child(t, "")
		for i := 0; dec.More(); i++ {
			if w.walk(dec, path.Index(i), et) {
				return true
			}
		}
		_, err := dec.Token() // the closing bracket
		return err != nil
	}
	return false
}

// manifestLines finds the line of a field in one YAML document.
type manifestLines struct {
	root *yamlv3.Node
	// first is the document's first line in the whole stream.
	first int
}

func newManifestLines(text []byte, first int) manifestLines {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(text, &doc); err != nil || len(doc.Content) == 0 {
		return manifestLines{first: first}
	}
	return manifestLines{root: doc.Content[0], first: first}
}

// line is the stream line of the field at path, or of its deepest parent the document has (a
// required field that is missing is reported where its parent is).
func (m manifestLines) line(path string) int {
	node := m.root
	if node == nil {
		return m.first
	}
	at := node.Line
	for _, segment := range pathSegments(path) {
		for node.Kind == yamlv3.AliasNode && node.Alias != nil {
			node = node.Alias
		}
		var next *yamlv3.Node
		switch node.Kind {
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == segment {
					next, at = node.Content[i+1], node.Content[i].Line
					break
				}
			}
		case yamlv3.SequenceNode:
			if i, err := strconv.Atoi(segment); err == nil && i >= 0 && i < len(node.Content) {
				next, at = node.Content[i], node.Content[i].Line
			}
		}
		if next == nil {
			break
		}
		node = next
	}
	return at + m.first - 1
}

// keyAt finds the key named key at the document's line (its own numbering, from 1): its field
// path and the mapping that holds it.
func (m manifestLines) keyAt(key string, line int) (string, *yamlv3.Node, bool) {
	var find func(node *yamlv3.Node, path *field.Path) (string, *yamlv3.Node, bool)
	find = func(node *yamlv3.Node, path *field.Path) (string, *yamlv3.Node, bool) {
		switch node.Kind {
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				k := node.Content[i]
				child := path.Child(k.Value)
				if path == nil {
					child = field.NewPath(k.Value)
				}
				if k.Value == key && k.Line == line {
					return child.String(), node, true
				}
				if p, n, ok := find(node.Content[i+1], child); ok {
					return p, n, true
				}
			}
		case yamlv3.SequenceNode:
			for i, item := range node.Content {
				if p, n, ok := find(item, path.Index(i)); ok {
					return p, n, true
				}
			}
		}
		return "", nil, false
	}
	if m.root == nil {
		return "", nil, false
	}
	return find(m.root, nil)
}

// LargestValue is the field path of the largest single value in v's JSON (a string, a number;
// not an object or list, which are many values) and its size in bytes: what makes an object
// built from v large, to name when it is too large.
func LargestValue(v any) (*field.Path, int) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, 0
	}
	var largest *field.Path
	var size int
	var start int64
	jsonWalk{
		beforeValue: func(dec *json.Decoder, _ *field.Path, _ reflect.Type) (read, stop bool) {
			start = dec.InputOffset()
			return false, false
		},
		afterToken: func(dec *json.Decoder, path *field.Path) bool {
			if n := int(dec.InputOffset() - start); path != nil && n > size {
				largest, size = path, n
			}
			return false
		},
	}.walk(json.NewDecoder(bytes.NewReader(data)), nil, reflect.TypeOf(v))
	return largest, size
}
