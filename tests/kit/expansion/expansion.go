// SPDX-License-Identifier: Apache-2.0

// Package expansion is the kubelet's $(VAR) expansion of a container's command and args, for the
// suites that run or read containers as a node would (kubernetes
// third_party/forked/golang/expansion/expand.go Expand, as kubelet_pods.go makeEnvironmentVariables
// and ExpandContainerCommandAndArgs use it): $(NAME) is the variable's value when it is defined
// and stays as written when it is not, $$ is $, and any other $ is itself.
package expansion

import "strings"

// Expand is input with the variables in vars expanded.
func Expand(input string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(input); i++ {
		switch {
		case strings.HasPrefix(input[i:], "$$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(input[i:], "$("):
			end := strings.IndexByte(input[i:], ')')
			if v, ok := vars[input[i+2:i+max(end, 2)]]; end > 0 && ok {
				b.WriteString(v)
				i += end
				continue
			}
			b.WriteByte(input[i])
		default:
			b.WriteByte(input[i])
		}
	}
	return b.String()
}

// All is every word of words expanded.
func All(words []string, vars map[string]string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = Expand(w, vars)
	}
	return out
}
