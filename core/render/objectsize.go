// SPDX-License-Identifier: Apache-2.0

package render

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// maxObjectBytes is the largest object the API server can store: etcd refuses a request over
// 1.5 MiB by default (--max-request-bytes; https://etcd.io/docs/latest/dev-guide/limit/), below
// kube-apiserver's own limit on a request's body, 3 MiB (k8s.io/apiserver pkg/server/config.go,
// MaxRequestBodyBytes). An object over it renders, and `pulumi up` or `kubectl apply` fails.
const maxObjectBytes = 3 << 19

// checkObjectSizes refuses a tree with an object the API server cannot store, at the service's
// largest value (the argument, script or environment value that makes it large).
func checkObjectSizes(tree *Tree) field.ErrorList {
	for _, obj := range tree.Objects {
		data, err := json.Marshal(obj.Object)
		if err != nil || len(data) <= maxObjectBytes {
			continue
		}
		path, size := api.LargestValue(tree.Service)
		if path == nil {
			path = field.NewPath("spec")
		}
		tooLong := field.TooLong(path, nil, maxObjectBytes)
		tooLong.Detail = fmt.Sprintf("this value is %s, and %s %s would be %s: the API server stores an object of at most %s "+
			"(etcd's request limit); keep large data out of the spec (in a ConfigMap, a volume or the image)",
			byteSize(size), obj.Kind, obj.Name, byteSize(len(data)), byteSize(maxObjectBytes))
		return field.ErrorList{tooLong}
	}
	return nil
}

// byteSize is n bytes for a person: "2.0 MiB", "512 KiB", "300 bytes".
func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
