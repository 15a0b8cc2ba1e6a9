# Entry points. `make demo` and `make test` are the README's two commands.
JOBS ?= $(shell nproc)
GEN := -G Ninja
PY := .venv/bin/python
DEMO_PROMPT ?= The meaning of
# The CUDA backend is built wherever nvcc is (on the PATH or in the toolkit's
# default place): CI compiles it, and its GPU tests skip without a device.
NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))
CUDA_FLAGS := $(if $(NVCC),-DKILN_CUDA=ON -DCMAKE_CUDA_COMPILER=$(NVCC),-DKILN_CUDA=OFF)

.PHONY: setup build demo test clean bench bench-big bench-offline

setup:
	./tools/setup.sh

build/release/build.ninja:
	cmake -S . -B build/release $(GEN) -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=OFF $(CUDA_FLAGS)

# The release tools: kiln (with the compiler) and kiln-opt.
build: setup build/release/build.ninja
	cmake --build build/release -j $(JOBS) --target kiln kiln-opt

demo: build
	./build/release/tools/kiln/kiln build test/fixtures/demo/model.onnx -o build/demo.plan
	@printf '\n%s' "$(DEMO_PROMPT)"
	@./build/release/tools/kiln/kiln run build/demo.plan -p "$(DEMO_PROMPT)" --max-new-tokens 48 --temperature 0.8 --top-p 0.95 --seed 7

# The full test suite (tools/make_test.sh, docs/testing.md): the compiler
# build under AddressSanitizer and UBSan (clang-19, -O1 with line tables),
# which also holds the libFuzzer targets and runs every test, and a
# runtime-only build (-DKILN_BUILD_COMPILER=OFF) that must work without MLIR,
# LLVM, protobuf or ONNX: it compiles the CUDA backend (where nvcc is) and
# runs what only it can check, and its kiln on plans the first build makes.
# GPU tests skip there, saying why; `make test-gpu` runs them on a GPU
# machine. It ends with a table of each phase's time.
test:
	JOBS=$(JOBS) NVCC=$(NVCC) PY=$(PY) FUZZ_TEST_SECONDS=$(FUZZ_TEST_SECONDS) ./tools/make_test.sh

# The inner loop (docs/testing.md#make-check): the runtime build's unit tests
# (build/ci-runtime, no sanitizers) and the lit tests (build/ci-asan), in make
# test's trees, so a few minutes once make test has built them.
.PHONY: check
check:
	JOBS=$(JOBS) NVCC=$(NVCC) PY=$(PY) ./tools/make_test.sh --check

# GPU tests (docs/testing.md#gpu-tests), on the GPU machine: tools/gpu/test_gpu.sh
# runs them from a bundle (GPU_BUNDLE: kiln and the programs test/gpu/bundle.txt
# names, or the GPU_BUNDLE.tar.xz that `make gpu-bundle` packs on the build
# machine). Where there is neither but a CUDA toolchain, it builds those targets
# into build/gpu first.
# GPU_SUITES picks suites (pipeline,oracle,fixtures,other,memcheck).
GPU_BUNDLE ?= build/gpu-bundle
GPU_SUITES ?= pipeline,oracle,fixtures,other,memcheck

.PHONY: test-gpu
test-gpu:
	@if [ -d $(GPU_BUNDLE) ] || [ -f $(GPU_BUNDLE).tar.xz ]; then \
	  KILN_GPU_BUNDLE=$(abspath $(GPU_BUNDLE)) KILN_GPU_BUNDLE_TAR=$(abspath $(GPU_BUNDLE)).tar.xz \
	    tools/gpu/test_gpu.sh --suites $(GPU_SUITES); \
	else \
	  echo "make test-gpu: no bundle at $(GPU_BUNDLE); building the GPU tests in build/gpu"; \
	  cmake -S . -B build/gpu $(GEN) -DCMAKE_BUILD_TYPE=Release $(CUDA_FLAGS) && \
	  cmake --build build/gpu -j $(JOBS) --target kiln $$(sed 's/#.*//' test/gpu/bundle.txt) && \
	  tools/gpu/test_gpu.sh build/gpu --suites $(GPU_SUITES); \
	fi

# libFuzzer targets (docs/testing.md): `make test` builds and runs them
# briefly in build/ci-asan; `make fuzz` has a clang build of its own, holding
# only them and the libraries they link, and `make fuzz FUZZ_SECONDS=3600 [FUZZ_TARGETS=plan_loader]` runs longer,
# keeping the corpus in build/fuzz/fuzz/work between runs.
FUZZ_TEST_SECONDS ?= 25
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= plan_loader,tokenizer,onnx_import,chat_template,serve_request

.PHONY: fuzz fuzz-build

build/fuzz/build.ninja:
	CC=clang-19 CXX=clang++-19 cmake -S . -B build/fuzz $(GEN) -DCMAKE_BUILD_TYPE=Release \
	    -DKILN_FUZZ=ON -DKILN_BUILD_TESTS=OFF -DKILN_CUDA=OFF

fuzz-build: build/fuzz/build.ninja
	cmake --build build/fuzz -j $(JOBS) --target kiln_fuzzers

fuzz: build fuzz-build
	$(PY) test/fuzz/run_fuzz.py --fuzz-dir build/fuzz/fuzz --builder build/release/tools/kiln/kiln \
	    --seconds $(FUZZ_SECONDS) --targets $(FUZZ_TARGETS)

# CPU benchmark against ONNX Runtime on the same ONNX files (docs/benchmarks.md):
# the fixtures, and a 1.1B Llama with random weights that tools/make_big_llama.py
# generates into BIG_LLAMA when it is missing (with DEV_PY, a Python that has
# tools/requirements-dev.txt), and the same model as a bf16 checkpoint exported
# in f32 would hold it (tools/bf16_valued_onnx.py, into BIG_LLAMA-bf16v). BENCH_LOCK,
# when set, is a lock file held around each process that loads the big model, on
# a machine whose memory is shared.
BIG_LLAMA ?= build/big/llama-1.1b
BIG_LLAMA_BF16V = $(BIG_LLAMA)-bf16v
DEV_PY ?= .venv-dev/bin/python
BENCH_LOCK ?=
BENCH_REAL = --real-size $(BIG_LLAMA) --real-size $(BIG_LLAMA_BF16V) \
    $(if $(BENCH_LOCK),--mem-lock $(BENCH_LOCK))

bench: build $(BIG_LLAMA)/model.onnx $(BIG_LLAMA_BF16V)/model.onnx
	$(PY) -c "import onnxruntime" 2>/dev/null || .venv/bin/pip install -q onnxruntime
	$(PY) tools/bench_cpu.py --kiln build/release/tools/kiln/kiln --repeats 5 --threads 2 \
	    test/fixtures/demo test/fixtures/llama-optimum test/fixtures/gpt2-optimum $(BENCH_REAL)

# Only the real-size model: kiln against ONNX Runtime, decode and a 16-token prefill.
bench-big: build $(BIG_LLAMA)/model.onnx $(BIG_LLAMA_BF16V)/model.onnx
	$(PY) -c "import onnxruntime" 2>/dev/null || .venv/bin/pip install -q onnxruntime
	$(PY) tools/bench_cpu.py --kiln build/release/tools/kiln/kiln --repeats 5 --threads 2 \
	    $(BENCH_REAL)

$(BIG_LLAMA)/model.onnx:
	@test -x $(DEV_PY) || { echo "make: generating $(BIG_LLAMA) needs torch, transformers and" \
	    "optimum: set DEV_PY to a Python with tools/requirements-dev.txt, or BIG_LLAMA to a" \
	    "folder made by tools/make_big_llama.py"; exit 2; }
	$(if $(BENCH_LOCK),flock $(BENCH_LOCK)) $(DEV_PY) tools/make_big_llama.py --out $(BIG_LLAMA)

$(BIG_LLAMA_BF16V)/model.onnx: $(BIG_LLAMA)/model.onnx
	$(PY) tools/bf16_valued_onnx.py $(BIG_LLAMA) $(BIG_LLAMA_BF16V)

# Continuous batching on the demo model: kiln at several concurrencies, ONNX
# Runtime serving the same requests one at a time, and a plot (docs/benchmarks.md).
bench-offline: build
	$(PY) -c "import onnxruntime, matplotlib" 2>/dev/null || .venv/bin/pip install -q -r tools/requirements-bench.txt
	mkdir -p build/bench
	./build/release/tools/kiln/kiln build test/fixtures/demo/model.onnx -o build/bench/demo.plan -q
	./build/release/tools/kiln/kiln bench offline build/bench/demo.plan --num-prompts 64 --input-len 64 \
	    --output-len 64 --concurrency 1,2,4,8,16,32 --threads 2 --json build/bench/kiln.json \
	    --write-requests build/bench/requests.jsonl
	$(PY) tools/bench_offline_ort.py --onnx test/fixtures/demo/model.onnx \
	    --requests build/bench/requests.jsonl --threads 2 --out build/bench/ort.json
	$(PY) tools/plot_bench.py --kiln build/bench/kiln.json --ort build/bench/ort.json \
	    --out build/bench/bench-offline-demo.png

# The GPU machine's kiln (docs/gpu.md): kiln and the GPU test programs linked
# with KILN_PORTABLE=ON into build/gpu-bundle.tar.xz, which the device tool
# carries; tools/gpu/run_8b.sh and tools/gpu/test_gpu.sh unpack it there.
.PHONY: gpu-bundle
gpu-bundle: setup
	JOBS=$(JOBS) ./tools/gpu/build_bundle.sh

clean:
	rm -rf build
