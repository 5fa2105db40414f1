// The generator of charts/teardown/values.schema.json, kept in a module of
// its own so that its library is not a requirement of the main module (nor of
// those who import pkg/finalizer). make chart runs it.
module github.com/teardown-dev/teardown/hack/tools/chartschema

go 1.26.0

require (
	github.com/invopop/jsonschema v0.14.0
	go.yaml.in/yaml/v4 v4.0.0-rc.2
)

require (
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/buger/jsonparser v1.1.2 // indirect
	github.com/pb33f/ordered-map/v2 v2.3.1 // indirect
)
