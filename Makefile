# tend: build, run an example, test.

# Go from /usr/local/go when `go` is not on PATH (where go.dev's tarball installs it):
# the tests run `go` themselves, so PATH is extended rather than GO set.
ifeq ($(shell command -v go 2>/dev/null),)
ifneq ($(wildcard /usr/local/go/bin/go),)
export PATH := /usr/local/go/bin:$(PATH)
$(info go is not on PATH: using /usr/local/go/bin/go)
endif
endif

GO      ?= go
PREFIX  ?= /usr/local
BIN     := bin/tend
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
# urfave_cli_no_docs leaves out the man/markdown generators (and their start-up cost).
TAGS    := urfave_cli_no_docs
# tend is built with the garbage collector before Go 1.26's default one ("Green Tea")
# where the toolchain still has it: in a supervisor's heap of a few MiB, Green Tea holds
# 90-230 KiB more anonymous memory for nothing measured in return (bench/README.md, the
# anonymous memory with 100 idle containers). An experiment the toolchain does not know
# fails `go env`, so one without it builds with its default; a GOEXPERIMENT set wins.
GCEXP    = $(or $(GOEXPERIMENT),$(shell GOEXPERIMENT=nogreenteagc $(GO) env GOEXPERIMENT 2>/dev/null))

# Images: podman when installed, else docker. IMAGE:TAG and IMAGE-example:TAG.
ENGINE  ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
IMAGE   ?= localhost/tend
TAG     ?= latest
# podman builds OCI images by default, which have no HEALTHCHECK, and would keep an
# image of every intermediate step.
IMAGE_FORMAT := $(if $(filter podman,$(notdir $(ENGINE))),--format docker --layers=false)


.PHONY: build install demo run test test-short lint bench bench-curve fuzz soak clean image image-example e2e

# -buildvcs=auto records the commit and its date (`tend version`) even where GOFLAGS
# turns it off.
build:
	GOEXPERIMENT=$(GCEXP) CGO_ENABLED=0 $(GO) build -buildvcs=auto -trimpath -tags $(TAGS) -ldflags '$(LDFLAGS)' -o $(BIN) .

# bin/tend to $(PREFIX)/bin (PREFIX=/usr/local by default; DESTDIR for packaging).
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/tend

# The program the example image runs besides tend (examples/kubernetes).
demo:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o bin/demo ./examples/kubernetes/demo

# The image FROM scratch with only bin/tend (docs/reference.md "Running in a container").
image: build
	$(ENGINE) build $(IMAGE_FORMAT) --target tend --build-arg VERSION=$(VERSION) -t $(IMAGE):$(TAG) .

# The image of examples/kubernetes: tend and bin/demo.
image-example: build demo
	$(ENGINE) build $(IMAGE_FORMAT) --target example --build-arg VERSION=$(VERSION) -t $(IMAGE)-example:$(TAG) .

# tend as PID 1 under a real OCI runtime (podman + runc): the image, the example,
# stop, reload, orphans, and podman kube play of examples/kubernetes.
e2e: build demo
	bash e2e/run.sh

# The main job on an example: Ctrl-C stops it cleanly.
run: build
	$(BIN) run examples/hello.yaml

# Everything CI runs: vet, every example validates (examples/foreign/* in their own formats), the whole suite under the race detector.
test: build
	$(GO) vet ./...
	@for f in examples/*.yaml; do $(BIN) validate $$f >/dev/null || { echo "example $$f does not validate"; $(BIN) validate $$f; exit 1; }; done
	@for f in examples/foreign/*; do [ -f $$f ] || continue; $(BIN) validate $$f >/dev/null 2>&1 || { echo "example $$f does not validate"; $(BIN) validate $$f; exit 1; }; done
	$(GO) test -race -count=1 -parallel 6 -timeout 15m ./...

lint:
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# Minutes of abuse (API connection flood, a 10 ms crash loop, a reload storm) against one
# tend; prints its FDs, RSS and goroutines at the start and the end. Not part of test.
soak:
	SOAK_DURATION=$${SOAK_DURATION:-3m} $(GO) test -tags soak -count=1 -v -run TestSoak -timeout 30m ./tests/

bench: build
	bash bench/run.sh

# tend's costs from 1 to 1000 containers: bench/curve.md and bench/curve.svg (root).
bench-curve: build
	bash bench/curve.sh

clean:
	rm -rf bin
