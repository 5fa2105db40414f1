// The benchmark's chart (docs/performance.png), in a module of its own so
// that golang.org/x/image, which draws it, is not a requirement of the main
// module and so of those who import pkg/finalizer. bench/cmd/bench runs it.
module github.com/teardown-dev/teardown/bench/plot

go 1.26.0

require github.com/teardown-dev/teardown v0.0.0

require golang.org/x/image v0.46.0

replace github.com/teardown-dev/teardown => ../..
