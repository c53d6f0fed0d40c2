// The generator's module for Kueue v0.18.6 (tag commit 4152c9bad956a361bb56b0f7994d492709835d96), the release before
// the pinned one. The Go module proxy does not serve sigs.k8s.io/kueue v0.18.6 ("This module version is not
// available"), so this module builds v0.18.4's package instead, proven to be v0.18.6's code: the test checks each
// file of apis/config/v1beta2 in the module cache against the git blob (or, where only a comment differs, the
// SHA-256 of its lines that are no `//` comment) of the v0.18.6 tag's tree, read from kubernetes-sigs/kueue:
//
// kueue-v0.18.6 blob apis/config/v1beta2/defaults.go 5423297dae7e0093cd728ba59909ce63fd040264
// kueue-v0.18.6 blob apis/config/v1beta2/doc.go 11daabe812e6699524c7c39cdf0451ce21324f36
// kueue-v0.18.6 blob apis/config/v1beta2/groupversion_info.go 0afdf8acbed621a574dfb54fcec2aad4475f8431
// kueue-v0.18.6 blob apis/config/v1beta2/zz_generated.deepcopy.go f6ebb235c630b72a12337ebb6af43bc7a724363c
// kueue-v0.18.6 blob apis/config/v1beta2/zz_generated.defaults.go bb6fe15b625ac588f306cd93b0a5d800b5fe6f52
// kueue-v0.18.6 code apis/config/v1beta2/configuration_types.go 02353da5b90d6408e5266c6057c5af6dca0d7edaf0a7dd58eef54dcf586aa8b9
//
// (configuration_types.go differs from v0.18.4's in one doc comment, of ResourceTransformation.MultiplyBy.) Both tags
// require k8s.io/api, apimachinery, client-go and component-base v0.36.1 and the same k8s.io/utils, as here.
module gpu-cluster-manifests/test/upstream/kueue-defaults

go 1.26.0

require sigs.k8s.io/kueue v0.18.4

require (
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/emicklei/go-restful/v3 v3.13.0 // indirect
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/jsonreference v0.21.5 // indirect
	github.com/go-openapi/swag v0.25.5 // indirect
	github.com/go-openapi/swag/cmdutils v0.25.5 // indirect
	github.com/go-openapi/swag/conv v0.25.5 // indirect
	github.com/go-openapi/swag/fileutils v0.25.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/go-openapi/swag/jsonutils v0.25.5 // indirect
	github.com/go-openapi/swag/loading v0.25.5 // indirect
	github.com/go-openapi/swag/mangling v0.25.5 // indirect
	github.com/go-openapi/swag/netutils v0.25.5 // indirect
	github.com/go-openapi/swag/stringutils v0.25.5 // indirect
	github.com/go-openapi/swag/typeutils v0.25.5 // indirect
	github.com/go-openapi/swag/yamlutils v0.25.5 // indirect
	github.com/google/gnostic-models v0.7.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/net v0.53.0 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sys v0.44.0 // indirect
	golang.org/x/term v0.43.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af // indirect
	gopkg.in/evanphx/json-patch.v4 v4.13.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	k8s.io/api v0.36.1 // indirect
	k8s.io/apimachinery v0.36.1 // indirect
	k8s.io/client-go v0.36.1 // indirect
	k8s.io/component-base v0.36.1 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/kube-openapi v0.0.0-20260319004828-5883c5ee87b9 // indirect
	k8s.io/utils v0.0.0-20260507154919-ff6756f316d2 // indirect
	sigs.k8s.io/controller-runtime v0.24.0 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.4.0 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
