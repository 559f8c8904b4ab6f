// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"
)

// awaitOutput waits for an output and returns its value, whether it is known (at preview it may
// not be), or the error that rejected it. The Go SDK has no public way to wait for an output, so
// this is the one place the component calls the SDK's unsupported internals.UnsafeAwaitOutput;
// awaitoutput_test.go pins the four answers the component relies on (a known value, a failed
// apply's error, an unknown at preview, a failed child's registration error), so a Pulumi upgrade
// that changes one fails there first.
func awaitOutput(ctx *pulumi.Context, o pulumi.Output) (value any, known bool, err error) {
	r, err := internals.UnsafeAwaitOutput(ctx.Context(), o)
	return r.Value, r.Known, err
}
