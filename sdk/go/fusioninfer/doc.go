// LLM inference on Kubernetes: LeaderWorkerSets, Volcano gang scheduling, the Gateway API Inference Extension.
package fusioninfer
