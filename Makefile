# trainsonnet: the commands a contributor needs. `make test` is what CI runs
# (.ci/run); `make check` is the fast, hermetic part of it.
.PHONY: build run check vet fmt shellcheck lint modgraph update-flag unit e2e test golden generate bench bench-cli bench-runtime faults clean record-operators bench-start

GO ?= go

# golangci-lint, built once from the Go module proxy (pinned; its go line is
# 1.26) into the same cache as the harness's binaries.
TRAINSONNET_CACHE ?= /var/cache/trainsonnet
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(TRAINSONNET_CACHE)/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint

# Static (no cgo): trainsonnet needs no C, and a static binary starts
# without the dynamic loader and libc (~2 MiB less resident, a little faster).
build:
	CGO_ENABLED=0 $(GO) build -o bin/trainsonnet ./cmd/trainsonnet

# Render the main job with its embedded defaults: no cluster, no network.
run: build
	bin/trainsonnet gen openmpi --name demo

# ./test/... is the harness's own module (test/go.mod; go.work joins the two):
# ./... at the root no longer reaches it, so it is named wherever it is meant.
vet:
	$(GO) vet ./... ./test/...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Every shell script: the ones the pods run (POSIX sh) and the harnesses.
shellcheck:
	shellcheck -s sh lib/assets/*.sh
	shellcheck -x $$(git ls-files 'test/*.sh' 'test/**/*.sh' '.ci/*' | grep -v '\.go$$')

unit:
	$(GO) test -count=1 ./... ./test/...

# The product's module graph holds only what the product imports: what the
# test harness builds (CoreDNS, kube-network-policies, client-go) must never
# reach a program that imports generator.
modgraph:
	@out=$$(GOWORK=off $(GO) list -m all | grep -E '^(github.com/coredns/|sigs.k8s.io/kube-network-policies|k8s.io/client-go )'); \
	if [ -n "$$out" ]; then echo "the product's go.mod pulls in harness modules:"; echo "$$out"; exit 1; fi

# Every test package must accept the module's one -update flag (it imports
# internal/goldentest), or `go test ./... -update` dies in that package.
update-flag:
	$(GO) test ./... ./test/... -run '^$$' -update >/dev/null

$(GOLANGCI_LINT):
	mkdir -p $(dir $@)
	GOBIN=$(dir $@) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

# .golangci.yml: the linters, and the import rules of ARCHITECTURE.md. The
# harness is its own module, linted with the same file.
lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...
	cd test && $(GOLANGCI_LINT) run --config ../.golangci.yml ./...

check: vet fmt shellcheck lint modgraph update-flag unit

# The end-to-end suites: a real control plane (and node) built here, cached
# under /var/cache/trainsonnet; see test/e2e.sh.
e2e:
	test/e2e.sh

# check, then the end-to-end suites; test/e2e.sh runs both, so that the
# steps that wait (the node's image, fetched from Debian) run beside the
# ones that use the CPU, and prints where the time went, one line a step.
test:
	test/e2e.sh --with-check

# Refresh golden files and generated code from the current output.
golden generate:
	$(GO) generate ./generator/...
	$(GO) test ./... ./test/... -run '.' -update >/dev/null

# Re-record what the Kubeflow operators (built once into the cache, run as
# host processes against a control plane with kwok nodes) create for their
# upstream examples: test/operators/testdata, which the migration tests
# compare trainsonnet's renders with. CI uses the committed recordings.
record-operators:
	test/operators/record.sh

# The same DDP training through the Kubeflow training operator's PyTorchJob,
# through trainsonnet's pytorch job rendered from it, as Jobs and as a
# JobSet (the real JobSet controller), and as a TrainJob through the
# Kubeflow Trainer v2 (on that JobSet controller), on the real node:
# apply -> every rank training, apply -> Complete, the pods' peak memory
# (test/jobs/benchstart_test.go).
bench-start:
	test/cluster/build.sh operators
	. test/cluster/versions.sh && WITH_NODE=1 WITH_JOBSET=1 test/node/with-node.sh env TRAINSONNET_E2E=1 TRAINSONNET_E2E_JOBSET=1 TRAINSONNET_BENCH_START=1 \
	  TRAINSONNET_TRAINING_OPERATOR_DIR=$(TRAINSONNET_CACHE)/training-operator-$$TRAINSONNET_TRAINING_OPERATOR_VERSION \
	  TRAINSONNET_TRAINER_DIR=$(TRAINSONNET_CACHE)/trainer-$$TRAINSONNET_TRAINER_VERSION \
	  $(GO) test -count=1 -v -timeout 40m -run '^TestBenchStart$$' ./test/jobs/

bench:
	$(GO) test ./generator -run '^$$' -bench . -benchmem

# A whole `trainsonnet gen` per prototype, cold, against a Go hello-world
# (issue 15's targets); run it on an idle machine.
bench-cli:
	$(GO) run ./test/benchcli

# Every fault on every prototype on the real node (test/jobs TestFaults;
# CI runs a case of each fault and each prototype's most likely one), and
# docs/failures.md's table of it in faults.md. Root; about
# 1.5 hours.
faults:
	TRAINSONNET_FAULTS=all TRAINSONNET_FAULTS_TABLE=$(CURDIR)/faults.md test/node/with-node.sh \
		env TRAINSONNET_E2E=1 $(GO) test -count=1 -v -timeout 150m -run TestFaults ./test/jobs/

# The pods' runtime (lib/assets/mpi.sh) at 100, 1,000 and 5,000 simulated
# workers: start and stop times, the launcher's peak processes and memory
# (issue 28's targets). Root, and test/scripts' packages; an idle machine.
bench-runtime:
	$(GO) run ./test/benchruntime

clean:
	rm -rf bin
