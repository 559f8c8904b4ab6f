// SPDX-License-Identifier: Apache-2.0

package inferenceservice

// Args and RoleArgs are generated from the api package's InferenceServiceSpec and Role.
//go:generate go run ./internal/argsgen -api ../../api -out args_generated.go
