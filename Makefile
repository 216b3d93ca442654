# gpuadmit: `make run` and `make test` set up everything on a fresh Debian machine.
# Builds are incremental in build/; Debian packages are installed when missing (as root).

BUILD      ?= build
RELEASE    ?= $(BUILD)-release
JOBS       ?= $(shell nproc)
LISTEN     ?= 127.0.0.1:8443
CMAKE_ARGS ?=
# Debian's python: it has python3-yaml and python3-jsonpatch.
PYTHON     := /usr/bin/python3
# CI: warnings are errors, and debug information is line tables only (GPUADMIT_DEBUG_INFO=lines:
# backtraces keep their file:line, and each of CI's three builds compiles about a fifth faster).
ifeq ($(CI),true)
CI_CMAKE_ARGS := -DGPUADMIT_DEBUG_INFO=lines
CMAKE_ARGS += -DGPUADMIT_WERROR=ON $(CI_CMAKE_ARGS)
endif

# Everything the build, the tests and the benchmarks use (DESIGN.md, "Dependencies").
DEBS := cmake g++ make pkg-config libcpp-httplib-dev libssl-dev nlohmann-json3-dev libfmt-dev \
        libyaml-cpp-dev libsimdjson-dev libjemalloc-dev libgtest-dev libgmock-dev libbenchmark-dev openssl curl \
        python3 python3-jsonpatch python3-yaml wrk nginx-light valgrind prometheus chromium bolt-16

# make image / make test-image: Debian's tools that build and run OCI images (image/).
IMAGE_DEBS := mmdebstrap buildah podman runc binutils

# make fuzz: clang and its libFuzzer runtime, installed only when fuzzing.
FUZZ_DEBS    := clang libclang-rt-14-dev
FUZZ_SECONDS ?= 60

.PHONY: all deps fuzz-deps image-deps build test test-sanitize test-image fuzz run bench certs \
        deploy image clean help cluster-tools cluster cluster-down test-cluster release test-release

all: build

help:
	@echo "make run     build and start gpuadmit on https://$(LISTEN) (dev certs, example policy, demo cluster)"
	@echo "make test    build and run every test"
	@echo "make release  the build the image ships in $(RELEASE)/ (Release, laid out by llvm-bolt)"
	@echo "make test-release  the end-to-end tests on that binary"
	@echo "make test-sanitize  the tests again under ASan and UBSan (build-sanitize/)"
	@echo "make fuzz    every libFuzzer target for FUZZ_SECONDS (default 60) each (build-fuzz/, clang)"
	@echo "make bench   micro-benchmarks and the HTTPS load comparison with nginx (closed and open loop; counted under callgrind)"
	@echo "make image   the OCI image build/gpuadmit-VERSION.oci.tar (mmdebstrap, buildah; root)"
	@echo "make test-image  the image built twice (one digest), its smoke test, the Dockerfile"
	@echo "make certs   dev CA and serving certificate in certs/dev/"
	@echo "make deploy  kubectl apply -k manifests/"
	@echo "make cluster a local control plane (etcd, kube-apiserver, controller-manager, scheduler, KWOK"
	@echo "             GPU nodes) with gpuadmit registered, left running; NODES=FILE for other nodes"
	@echo "make cluster-down  stop it"
	@echo "make test-cluster  the scenarios on the real control plane"
	@echo "make cluster-tools build the pinned Kubernetes components into $(BUILD)/cluster/bin"

deps:
	@$(MAKE) --no-print-directory install-debs PACKAGES="$(DEBS)"

fuzz-deps: deps
	@$(MAKE) --no-print-directory install-debs PACKAGES="$(FUZZ_DEBS)"

image-deps: deps
	@$(MAKE) --no-print-directory install-debs PACKAGES="$(IMAGE_DEBS)"

.PHONY: install-debs
install-debs:
	@missing=$$(for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "gpuadmit needs these Debian packages: $$missing"; \
	    echo "run as root, or first: sudo apt-get install -y $$missing"; exit 1; \
	  fi; \
	  echo "installing Debian packages: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null || exit 1; \
	fi

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(CMAKE_ARGS)

build: deps $(BUILD)/CMakeCache.txt
	@if [ -n "$(CMAKE_ARGS)" ]; then cmake -S . -B $(BUILD) $(CMAKE_ARGS) >/dev/null; fi
	cmake --build $(BUILD) -j$(JOBS)

# Every test but the cluster scenarios (make test-cluster), which need the Kubernetes components.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) -LE cluster

# The build the image ships: Release (-O2, no debug information), laid out by llvm-bolt
# (cmake/bolt.cmake); only the binary and the fake API server its end-to-end tests start.
release: deps
	cmake -S . -B $(RELEASE) -DCMAKE_BUILD_TYPE=Release -DGPUADMIT_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(RELEASE) -j$(JOBS) --target gpuadmit gpuadmit_fake_api

# The end-to-end tests and the layout's checks, on the binary the image ships.
test-release: release
	ctest --test-dir $(RELEASE) --output-on-failure -j$(JOBS) -L 'e2e|image'

# The real Kubernetes components, from the versions pinned in tests/cluster/*/go.mod (Go from
# the module proxy), into $(BUILD)/cluster/bin; a second run builds nothing.
CLUSTER_BIN := $(BUILD)/cluster/bin
NODES       ?= tests/cluster/nodes.json
cluster-tools:
	tests/cluster/build-tools.sh $(CLUSTER_BIN)

# A local control plane with gpuadmit registered, left running (make cluster-down stops it).
cluster: build cluster-tools
	$(PYTHON) tests/cluster/cluster.py up --dir $(BUILD)/cluster --gpuadmit $(BUILD)/gpuadmit \
	  --nodes $(NODES)

cluster-down:
	$(PYTHON) tests/cluster/cluster.py down --dir $(BUILD)/cluster

# The scenarios on the real control plane, one after another (each starts its own).
test-cluster: build cluster-tools
	ctest --test-dir $(BUILD) --output-on-failure -L cluster

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer, in their own build dir.
test-sanitize: deps
	cmake -S . -B $(BUILD)-sanitize -DGPUADMIT_SANITIZE=ON -DGPUADMIT_BENCH=OFF \
	  -DCMAKE_BUILD_TYPE=Debug $(CMAKE_ARGS)
	cmake --build $(BUILD)-sanitize -j$(JOBS)
	ctest --test-dir $(BUILD)-sanitize --output-on-failure -j$(JOBS) -LE cluster

# The OCI image (image/build-image.sh): the release binary stripped, on a root of Debian packages.
image: release image-deps
	image/build-image.sh --binary $(RELEASE)/gpuadmit

# The end-to-end tests on the release binary, then the image built from it twice (one digest),
# its size, its smoke test, and image/Dockerfile with podman.
test-image: test-release image-deps
	tests/image/image_test.sh . $(RELEASE)/gpuadmit

# libFuzzer targets, built by clang with ASan and UBSan in their own build dir.
fuzz: fuzz-deps
	cmake -S . -B $(BUILD)-fuzz -DGPUADMIT_FUZZ=ON -DGPUADMIT_TESTS=OFF -DGPUADMIT_BENCH=OFF \
	  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CI_CMAKE_ARGS)
	cmake --build $(BUILD)-fuzz -j$(JOBS)
	tests/fuzz/run.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

certs: deps
	certs/gen-certs.sh --out certs/dev

run: build certs
	$(BUILD)/gpuadmit serve --policy manifests/examples/policy.yaml \
	  --cluster manifests/examples/demo-cluster.json \
	  --tls-cert certs/dev/tls.crt --tls-key certs/dev/tls.key --listen $(LISTEN)

bench: build release
	$(BUILD)/bench/gpuadmit_bench
	$(BUILD)/bench/gpuadmit_status_bench
	bench/load/run.sh --gpuadmit $(RELEASE)/gpuadmit
	bench/load/run.sh --gpuadmit $(RELEASE)/gpuadmit --client gpuadmit_load \
	  --load-client $(BUILD)/bench/gpuadmit_load
	bench/load/run.sh --gpuadmit $(RELEASE)/gpuadmit --load-client $(BUILD)/bench/gpuadmit_load \
	  --rate "1000 5000" --rounds 10 --duration 2 --controls
	bench/load/run.sh --gpuadmit $(RELEASE)/gpuadmit --load-client $(BUILD)/bench/gpuadmit_load \
	  --callgrind --rate 100 --duration 20 --warmup 0 --rate-connections 4 --client-threads 1

deploy:
	kubectl apply -k manifests/

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize $(BUILD)-fuzz $(RELEASE)
