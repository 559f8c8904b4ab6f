// SPDX-License-Identifier: Apache-2.0

package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Document is one decoded InferenceService with where it came from, for error messages.
type Document struct {
	Service *InferenceService
	// Line is the 1-based line of the file where the document starts.
	Line int
	// Problems are the document's decoding problems, nil when there are none. Service is then
	// what the rest of the document says (each value of the wrong type left out, an unknown field
	// ignored), for validation to report its problems too, never to build; or nil when there is
	// no rest (a YAML syntax error, another kind, a document that is no object).
	Problems *DecodeError
	lines    manifestLines
	skipped  leftOut
}

// leftOut are the field paths decoding could not read as written: the values of the wrong type
// it left out, and the fields unknown ones were probably meant to be (misspelt).
type leftOut struct {
	values, misspelt []string
}

// add records where a decoding problem leaves the document not as written.
func (l *leftOut) add(p decodeProblem) {
	if p.typeError {
		l.values = append(l.values, p.path)
	}
	if p.meant != "" {
		l.misspelt = append(l.misspelt, p.meant)
	}
}

// covers reports whether the field at path is, holds or is within a value decoding left out, or
// is (or is within) the field a misspelt one was meant to be.
func (l leftOut) covers(path string) bool {
	for _, out := range l.values {
		if within(path, out) || within(out, path) {
			return true
		}
	}
	for _, meant := range l.misspelt {
		if within(path, meant) {
			return true
		}
	}
	return false
}

// DecodeError reports every problem found in one document of a manifest stream.
type DecodeError struct {
	// Line is the 1-based line where the document starts.
	Line     int
	Problems []Problem
}

// Problem is one problem of a document, at the line of the field it names.
type Problem struct {
	Line    int
	Message string
}

func (e *DecodeError) Error() string {
	texts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		texts[i] = fmt.Sprintf("line %d: %s", p.Line, p.Message)
	}
	return strings.Join(texts, "; ")
}

// Decode reads a multi-document YAML stream of InferenceServices. Decoding is strict: an unknown
// or duplicated field is an error naming its path, and a YAML syntax error names its line in the
// whole stream. Empty documents are skipped. All documents are checked; every error is returned,
// and only the documents without one.
func Decode(data []byte) ([]Document, []error) {
	var docs []Document
	var errs []error
	for _, doc := range DecodeEach(data) {
		if doc.Problems != nil {
			errs = append(errs, doc.Problems)
			continue
		}
		docs = append(docs, doc)
	}
	return docs, errs
}

// MaxServices is the most services one manifest holds. Every service of a render is built and
// held before anything is printed or registered, at about 1 ms and 90 KB of allocations a
// one-role service (core/render BenchmarkLoadManifest): 1,000 take about a second, where 109,000
// took 105 s and 4.2 GB (issue 42) with nothing printed until the end.
const MaxServices = 1000

// DecodeEach is Decode that keeps each document with its problems (Document.Problems) and what
// the rest of it says, so that a front door reports a document's decoding problems and the rules
// the rest breaks at once.
func DecodeEach(data []byte) []Document {
	var docs []Document
	for _, chunk := range splitDocuments(data) {
		if isBlank(chunk.text) {
			continue
		}
		if len(docs) == MaxServices {
			return append(docs, Document{Line: chunk.line, Problems: &DecodeError{Line: chunk.line, Problems: []Problem{{chunk.line,
				fmt.Sprintf("a manifest holds at most %d services: split it into files of fewer, and render or deploy each", MaxServices)}}}})
		}
		if doc := decodeOne(chunk.text, chunk.line); doc.Service != nil || doc.Problems != nil {
			docs = append(docs, doc) // a document that is only null ("~", "&anchor") holds no service
		}
	}
	return docs
}

// LeftOut reports whether the field at path (a field.Error's Field) is, holds or is within a
// value of the wrong type that decoding left out, or is (or is within) the field a misspelt one
// was meant to be ("image" of "imag"): validation's verdict there is about a value the user did
// not write as read, and the decoding problem already says what is wrong.
func (d Document) LeftOut(path string) bool { return d.skipped.covers(path) }

// within reports whether the field path is parent or within it.
func within(path, parent string) bool {
	return path == parent || strings.HasPrefix(path, parent+".") || strings.HasPrefix(path, parent+"[")
}

func decodeOne(text []byte, startLine int) Document {
	doc := Document{Line: startLine}
	jsonData, err := yaml.YAMLToJSONStrict(text)
	if err != nil {
		doc.Problems = yamlError(err, text, startLine)
		return doc
	}
	if bytes.Equal(bytes.TrimSpace(jsonData), []byte("null")) {
		return doc
	}
	doc.lines = newManifestLines(text, startLine)
	svc, problems := decodeJSON(jsonData)
	doc.Service = svc
	if len(problems) > 0 {
		located := make([]Problem, len(problems))
		for i, p := range problems {
			located[i] = Problem{Line: doc.lines.line(p.path), Message: p.message}
			doc.skipped.add(p)
		}
		doc.Problems = &DecodeError{Line: startLine, Problems: located}
	}
	return doc
}

// yamlError is a YAML parser's error in a document that starts at startLine, at the line it names.
func yamlError(err error, text []byte, startLine int) *DecodeError {
	line := startLine
	if m := yamlLinePattern.FindStringSubmatch(err.Error()); m != nil {
		if n, atoiErr := strconv.Atoi(m[1]); atoiErr == nil {
			line = n + startLine - 1
			if message, ok := repeatedKey(err.Error(), text, n, startLine); ok {
				return &DecodeError{Line: startLine, Problems: []Problem{{line, message}}}
			}
		}
	}
	return &DecodeError{Line: startLine, Problems: []Problem{{line, absoluteYAMLLines(err.Error(), startLine)}}}
}

// repeatedKeyPattern is the YAML parser's message for a mapping that gives a key twice.
var repeatedKeyPattern = regexp.MustCompile(`key "([^"]*)" already set in map`)

// repeatedKey says, at its field path, which key the document gives twice at the document's line
// (strict decoding refuses it, as kubectl does): twice in one mapping, or once after a merge key
// ("<<") gave it, an override YAML allows but strict decoding does not; lines are the stream's,
// the document starting at startLine. False when the message is about something else or the key
// is not found.
func repeatedKey(message string, text []byte, line, startLine int) (string, bool) {
	m := repeatedKeyPattern.FindStringSubmatch(message)
	if m == nil {
		return "", false
	}
	path, mapping, ok := newManifestLines(text, 1).keyAt(m[1], line)
	if !ok {
		return "", false
	}
	var lines []string
	merged := false
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		switch mapping.Content[i].Value {
		case m[1]:
			lines = append(lines, strconv.Itoa(mapping.Content[i].Line+startLine-1))
		case "<<":
			merged = true
		}
	}
	if len(lines) == 1 && merged {
		return fmt.Sprintf("%s: given again after the merge key (<<) gave it: strict decoding, as kubectl's, refuses "+
			"an override of a merged key; leave %s out of the anchor, or write the mapping out", path, m[1]), true
	}
	return fmt.Sprintf("%s: given %d times in one mapping (lines %s): give it once", path, len(lines), strings.Join(lines, ", ")), true
}

// DecodeFile decodes a file of one YAML or JSON document that is not a manifest (a nodes file, a
// Platform spec) into the struct into points to, as strictly as a manifest. Its problems come as
// a *FileError, each at its line; the FileLines it returns put the problems found later
// (validation's) at theirs. When decoding read the rest of the document (FileLines.Decoded), a
// caller may check it too: FileLines.Error then says the decoding problems with the checks',
// but those about a value decoding left out.
func DecodeFile(file string, data []byte, into any) (FileLines, error) {
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return FileLines{file: file}, &FileError{File: file, Problems: yamlError(err, data, 1).Problems}
	}
	lines := FileLines{file: file, lines: newManifestLines(data, 1)}
	problems, whole := strictDecode(jsonData, into)
	lines.decoded = whole
	if len(problems) > 0 {
		for _, p := range problems {
			lines.problems = append(lines.problems, Problem{Line: lines.lines.line(p.path), Message: p.message})
			lines.skipped.add(p)
		}
		return lines, &FileError{File: file, Problems: lines.problems}
	}
	return lines, nil
}

// FileLines finds the lines of field paths in a file DecodeFile read, and keeps its decoding
// problems.
type FileLines struct {
	file     string
	lines    manifestLines
	problems []Problem
	skipped  leftOut
	decoded  bool
}

// Decoded reports whether decoding read the document, but for the values of its problems: the
// rest may be checked, so that one wrong value hides no other problem.
func (l FileLines) Decoded() bool { return l.decoded }

// Error is the decoding problems and errs at their lines in the file, in the order of the lines
// (an error about a value decoding left out is not said twice), or nil when there are none.
func (l FileLines) Error(errs field.ErrorList) error {
	problems := slices.Clone(l.problems)
	for _, err := range errs {
		if !l.skipped.covers(err.Field) {
			problems = append(problems, Problem{Line: l.lines.line(err.Field), Message: err.Error()})
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.SortStableFunc(problems, func(a, b Problem) int { return a.Line - b.Line })
	return &FileError{File: l.file, Problems: problems}
}

// FileError is every problem of a file that is not a manifest, each at its line.
type FileError struct {
	File     string
	Problems []Problem
}

// Lines are the problems, one a line: "nodes.yaml:4: nodes[1].name: Duplicate value: ...".
func (e *FileError) Lines() []string {
	out := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p.Message
		if e.File != "" { // a spec given as values, not a file
			out[i] = fmt.Sprintf("%s:%d: %s", e.File, p.Line, p.Message)
		}
	}
	return out
}

func (e *FileError) Error() string { return strings.Join(e.Lines(), "; ") }

// LineOf is the manifest line of the field at path (a field.Error's Field), or of its deepest
// parent the document has.
func (d Document) LineOf(path string) int {
	if d.lines.root == nil {
		return d.Line
	}
	return d.lines.line(path)
}

// DecodeService decodes one InferenceService given as JSON, as strictly as a manifest: the
// provider decodes every language's inputs with it, so all front doors read the same model.
func DecodeService(jsonData []byte) (*InferenceService, error) {
	svc, problems := decodeJSON(jsonData)
	if len(problems) > 0 {
		texts := make([]string, len(problems))
		for i, p := range problems {
			texts[i] = p.message
		}
		return nil, errors.New(strings.Join(texts, "; "))
	}
	return svc, nil
}

// decodeProblem is a decoding problem and the field path it is at.
type decodeProblem struct {
	path, message string
	// typeError: a value of the wrong type, which ends decoding.
	typeError bool
	// meant is the field an unknown one was probably meant to be, "" if none is near.
	meant string
}

var serviceType = reflect.TypeFor[InferenceService]()

// maxTypeProblems bounds the values of the wrong type one document reports: beyond it, the
// document is not what the user meant to write, and more lines say no more.
const maxTypeProblems = 50

// strictDecode decodes JSON into the struct into points to: an unknown or duplicated field is a
// problem naming its path (an unknown one with the known field it is nearest to), and a value of
// the wrong type is a problem naming its path with list indexes. encoding/json reports the first
// value of the wrong type only: each is left out (made null) and the rest decoded again, to find
// the next. whole is false when into holds nothing (the wrong type at the root, or a value that
// could not be left out); else it holds the rest of the document.
func strictDecode(jsonData []byte, into any) (problems []decodeProblem, whole bool) {
	root := reflect.TypeOf(into).Elem()
	for {
		strictErrs, err := sigsjson.UnmarshalStrict(jsonData, into)
		if err == nil {
			return append(problems, strictProblems(strictErrs, root)...), true
		}
		problem := typeProblem(jsonData, err, root)
		problems = append(problems, problem)
		rest, ok := leaveOut(jsonData, problem.path, root)
		if !ok || len(problems) >= maxTypeProblems {
			return problems, false
		}
		jsonData = rest
		reflect.ValueOf(into).Elem().SetZero()
	}
}

// strictProblems are sigs.k8s.io/json's strict errors (unknown and duplicated fields) as problems
// at their paths.
func strictProblems(strictErrs []error, root reflect.Type) []decodeProblem {
	var problems []decodeProblem
	for _, e := range strictErrs {
		problem := decodeProblem{message: e.Error()}
		if located, ok := e.(interface{ FieldPath() string }); ok {
			problem.path = located.FieldPath()
			if strings.HasPrefix(e.Error(), "unknown field") {
				if near := didYouMean(root, problem.path); near != "" {
					problem.message += fmt.Sprintf(" (did you mean %q?)", near)
					problem.meant = strings.TrimSuffix(problem.path, pathSegments(problem.path)[len(pathSegments(problem.path))-1]) + near
				}
			}
		}
		problems = append(problems, problem)
	}
	return problems
}

// leaveOut is jsonData with the value at the field path made null, which decoding leaves as it
// was (a zero value); false when there is no value at path to leave out (the root's, or a path
// without the list indexes that find it).
func leaveOut(jsonData []byte, path string, root reflect.Type) ([]byte, bool) {
	var rest []byte
	jsonWalk{beforeValue: func(dec *json.Decoder, at *field.Path, _ reflect.Type) (read, stop bool) {
		if at.String() != path {
			return false, false
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return true, true
		}
		end := int(dec.InputOffset())
		if start := end - len(raw); start >= 0 && bytes.Equal(jsonData[start:end], raw) && !bytes.Equal(raw, []byte("null")) {
			rest = append(append(append([]byte{}, jsonData[:start]...), "null"...), jsonData[end:]...)
		}
		return true, true
	}}.walk(json.NewDecoder(bytes.NewReader(jsonData)), nil, root)
	return rest, rest != nil
}

// DecodeStrictly decodes JSON into the struct into points to as strictly as a manifest (every
// unknown or duplicated field, or the value of the wrong type, named by its path); the error
// holds every problem.
func DecodeStrictly(jsonData []byte, into any) error {
	return DecodeStrictlyAt(jsonData, into, nil)
}

// DecodeStrictlyAt is DecodeStrictly of a value that is at the field path at of a larger
// document (a role's pod template, which the component receives on its own): every problem
// names its field from the document's root.
func DecodeStrictlyAt(jsonData []byte, into any, at *field.Path) error {
	problems, _ := strictDecode(jsonData, into)
	if len(problems) == 0 {
		return nil
	}
	texts := make([]string, len(problems))
	for i, p := range problems {
		texts[i] = p.message
		switch {
		case at == nil:
		case p.path == "": // the value itself is of the wrong type
			texts[i] = at.String() + ": " + strings.TrimPrefix(p.message, "the document ")
		default: // each message names its path once, where it starts or quoted
			texts[i] = strings.Replace(p.message, p.path, at.String()+"."+p.path, 1)
		}
	}
	return errors.New(strings.Join(texts, "; "))
}

// decodeJSON is strict decoding of a service, with its apiVersion and kind checked: its problems,
// and the service the rest of the document says (nil when there is none, or it is of another kind).
func decodeJSON(jsonData []byte) (*InferenceService, []decodeProblem) {
	if problem, other := otherKind(jsonData); other {
		return nil, []decodeProblem{problem} // its fields are another kind's: naming each says nothing
	}
	var svc InferenceService
	problems, whole := strictDecode(jsonData, &svc)
	if !whole {
		return nil, problems
	}
	if svc.APIVersion != APIVersion || svc.Kind != Kind { // a kind of the wrong type, left out
		return nil, problems
	}
	return &svc, problems
}

// otherKind is the one problem of a document of another kind than an InferenceService (false
// when it is one, or is no object, which strict decoding says): for an object the render made
// (it carries ServiceLabel), that it is rendered output and where it came from.
func otherKind(jsonData []byte) (decodeProblem, bool) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Labels map[string]any `json:"labels"`
		} `json:"metadata"`
	}
	if json.Unmarshal(jsonData, &head) != nil || head.APIVersion == APIVersion && head.Kind == Kind {
		return decodeProblem{}, false
	}
	if service, ok := head.Metadata.Labels[ServiceLabel].(string); ok && head.Kind != "" {
		return decodeProblem{path: "apiVersion", message: fmt.Sprintf("this is rendered output, a %s of InferenceService %q: give the InferenceService manifest it was rendered from",
			head.Kind, service)}, true
	}
	return decodeProblem{path: "apiVersion", message: fmt.Sprintf("apiVersion/kind %q/%q: must be %q/%q",
		head.APIVersion, head.Kind, APIVersion, Kind)}, true
}

type documentChunk struct {
	text []byte
	line int
}

// splitDocuments splits a YAML stream on "---" and "..." lines (isSeparator), remembering where each starts,
// the way k8s.io/apimachinery's YAMLReader splits, so that errors can name absolute lines.
func splitDocuments(data []byte) []documentChunk {
	var chunks []documentChunk
	current := documentChunk{line: 1}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 64*1024), len(data)+1)
	lineNo := 0
	for scanner.Scan() {
		lineNo++
		line := scanner.Bytes()
		if isSeparator(line) {
			chunks = append(chunks, current)
			current = documentChunk{line: lineNo + 1}
			continue
		}
		current.text = append(current.text, line...)
		current.text = append(current.text, '\n')
	}
	return append(chunks, current)
}

// isSeparator: a "---" line starts a document, and a "..." line ends one (YAML 1.2, 9.1.4),
// after which another may follow without "---": either is where one document ends.
func isSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) && !bytes.HasPrefix(line, []byte("...")) {
		return false
	}
	rest := bytes.TrimSpace(line[3:])
	return len(rest) == 0 || rest[0] == '#'
}

func isBlank(text []byte) bool {
	for _, line := range bytes.Split(text, []byte("\n")) {
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) > 0 && trimmed[0] != '#' {
			return false
		}
	}
	return true
}

var yamlLinePattern = regexp.MustCompile(`line (\d+)`)

// absoluteYAMLLines rewrites "line N" in a YAML parser message from document-relative to
// stream-absolute numbering.
func absoluteYAMLLines(msg string, startLine int) string {
	return yamlLinePattern.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return fmt.Sprintf("line %d", n+startLine-1)
	})
}

// typeProblem says which field has a value of the wrong type and what it must be, in the field
// path form of every other problem ("spec.roles[0].replicas: must be an integer, not string").
// JSON decoding names the field without list indexes; valuePathAt finds them from the offset.
func typeProblem(jsonData []byte, err error, root reflect.Type) decodeProblem {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return unmarshalerProblem(jsonData, err, root)
	}
	// A type's own UnmarshalJSON (intstr.IntOrString's) reports an offset within its value:
	// the value found there is then not the field named (nor a map value of it), and the
	// field's name is all there is.
	path := valuePathAt(jsonData, typeErr.Offset, root)
	named := withoutEmbedded(root, typeErr.Field)
	if found := withoutIndexes(path); found != named && !strings.HasPrefix(found, named+".") {
		path = named
	}
	want := "a " + typeErr.Type.String()
	switch typeErr.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "an integer"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice:
		want = "a list"
	case reflect.Map, reflect.Struct:
		want = "an object"
	}
	if path == "" {
		return decodeProblem{message: fmt.Sprintf("the document must be %s, not %s", want, typeErr.Value), typeError: true}
	}
	return decodeProblem{path: path, message: fmt.Sprintf("%s: must be %s, not %s", path, want, typeErr.Value), typeError: true}
}

var quantityType = reflect.TypeFor[resource.Quantity]()

// unmarshalerProblem says which field a type's own UnmarshalJSON refused, and why: encoding/json
// returns such an error as it is, with neither the field nor an offset, so the value is found by
// decoding each value of such a type again, in document order (valueRefusedBy). A quantity's
// error is its parser's regular expression (resource.ErrFormatWrong): it is said in words.
func unmarshalerProblem(jsonData []byte, err error, root reflect.Type) decodeProblem {
	path, value, t, refusal := valueRefusedBy(jsonData, root)
	if refusal == nil { // not found again: the decoder's own words are all there is
		return decodeProblem{message: err.Error(), typeError: true}
	}
	if indirect(t) == quantityType {
		return decodeProblem{path: path, message: fmt.Sprintf("%s: must be a quantity such as 16Gi, 500m or 2, not %s", path, value), typeError: true}
	}
	return decodeProblem{path: path, message: fmt.Sprintf("%s: %s, not %s", path, refusal.Error(), value), typeError: true}
}

// valueRefusedBy is the first value in jsonData, under the type root, whose type's own
// UnmarshalJSON refuses it: its field path, the value as written, its type and the refusal.
func valueRefusedBy(jsonData []byte, root reflect.Type) (path string, value json.RawMessage, t reflect.Type, refusal error) {
	jsonWalk{beforeValue: func(dec *json.Decoder, at *field.Path, vt reflect.Type) (read, stop bool) {
		if vt == nil || !reflect.PointerTo(indirect(vt)).Implements(unmarshalerType) {
			return false, false
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return true, true
		}
		if err := reflect.New(indirect(vt)).Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			path, value, t, refusal = at.String(), raw, vt, err
			return true, true
		}
		return true, false
	}}.walk(json.NewDecoder(bytes.NewReader(jsonData)), nil, root)
	return path, value, t, refusal
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
