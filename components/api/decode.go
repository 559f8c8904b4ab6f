package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Document is one decoded InferenceService with where it came from, for error messages.
type Document struct {
	Service *InferenceService
	// Line is the 1-based line of the file where the document starts.
	Line int
}

// DecodeError reports every problem found in one document of a manifest stream.
type DecodeError struct {
	Line     int
	Problems []string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("document at line %d: %s", e.Line, strings.Join(e.Problems, "; "))
}

// Decode reads a multi-document YAML stream of InferenceServices. Decoding is strict: an unknown
// or duplicated field is an error naming its path, and a YAML syntax error names its line in the
// whole stream. Empty documents are skipped. All documents are checked; every error is returned.
func Decode(data []byte) ([]Document, []error) {
	var docs []Document
	var errs []error
	for _, chunk := range splitDocuments(data) {
		if isBlank(chunk.text) {
			continue
		}
		svc, err := decodeOne(chunk.text, chunk.line)
		switch {
		case err != nil:
			errs = append(errs, err)
		case svc != nil: // a document that is only comments, or null ("~", "&anchor"), holds no service
			docs = append(docs, Document{Service: svc, Line: chunk.line})
		}
	}
	return docs, errs
}

func decodeOne(text []byte, startLine int) (*InferenceService, error) {
	jsonData, err := yaml.YAMLToJSONStrict(text)
	if err != nil {
		return nil, &DecodeError{Line: startLine, Problems: []string{absoluteYAMLLines(err.Error(), startLine)}}
	}
	if bytes.Equal(bytes.TrimSpace(jsonData), []byte("null")) {
		return nil, nil
	}
	svc, problems := decodeJSON(jsonData)
	if len(problems) > 0 {
		return nil, &DecodeError{Line: startLine, Problems: problems}
	}
	return svc, nil
}

// DecodeService decodes one InferenceService given as JSON, as strictly as a manifest: the
// provider decodes every language's inputs with it, so all front doors read the same model.
func DecodeService(jsonData []byte) (*InferenceService, error) {
	svc, problems := decodeJSON(jsonData)
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return svc, nil
}

// decodeJSON is strict decoding: an unknown or duplicated field is a problem naming its path.
func decodeJSON(jsonData []byte) (*InferenceService, []string) {
	var svc InferenceService
	strictErrs, err := sigsjson.UnmarshalStrict(jsonData, &svc)
	if err != nil {
		return nil, []string{typeProblem(err)}
	}
	var problems []string
	for _, e := range strictErrs {
		problems = append(problems, e.Error())
	}
	if svc.APIVersion != APIVersion || svc.Kind != Kind {
		problems = append(problems, fmt.Sprintf("apiVersion/kind %q/%q: must be %q/%q",
			svc.APIVersion, svc.Kind, APIVersion, Kind))
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return &svc, nil
}

type documentChunk struct {
	text []byte
	line int
}

// splitDocuments splits a YAML stream on "---" separator lines, remembering where each starts,
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

func isSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
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
// path form of every other problem ("spec.roles.replicas: must be an integer, not string "two"").
// JSON decoding does not track list indexes, so a field in a list is named without its index.
func typeProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) || typeErr.Field == "" {
		return err.Error()
	}
	want := "a " + typeErr.Type.String()
	switch typeErr.Type.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		want = "an integer"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice:
		want = "a list"
	case reflect.Map, reflect.Struct:
		want = "an object"
	}
	return fmt.Sprintf("%s: must be %s, not %s", typeErr.Field, want, typeErr.Value)
}
