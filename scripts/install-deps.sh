#!/usr/bin/env bash
# Installs every Debian package Strata needs to build, test and benchmark.
# Usage: scripts/install-deps.sh [build|test|bench]   (each level includes the ones before)
set -euo pipefail
level="${1:-test}"

build_pkgs=(
  build-essential cmake ninja-build ccache pkg-config git
  libssl-dev libisal-dev librocksdb-dev libzstd-dev liblz4-dev libsnappy-dev libbz2-dev zlib1g-dev
  libfmt-dev libspdlog-dev libcli11-dev libpugixml-dev nlohmann-json3-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libfuzzer-14-dev  # scripts/fuzz.sh: libFuzzer targets (CI runs their regression inputs)
  libfuse3-dev libsqlite3-dev libhiredis-dev libpq-dev pybind11-dev python3-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc  # the Milvus gRPC API (src/milvus)
)
test_pkgs=(
  awscli python3 python3-boto3 python3-requests s3cmd rclone curl procps openssl redis-server
  postgresql  # tests start their own server (initdb + postgres on loopback)
  fuse3 acl python3-numpy python3-pandas python3-torch chromium
  python3-protobuf python3-grpcio python3-tqdm  # strata.vector: MilvusClient (embedded, remote), ingest bar
)
bench_pkgs=( nginx wrk hyperfine python3-numpy python3-hnswlib python3-faiss libhnswlib-dev dataset-fashion-mnist
  s3fs python3-matplotlib )

pkgs=("${build_pkgs[@]}")
case "$level" in
  build) ;;
  test) pkgs+=("${test_pkgs[@]}") ;;
  bench) pkgs+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
  *) echo "usage: $0 [build|test|bench]" >&2; exit 2 ;;
esac

# Node.js: a machine may already carry a Node.js build that bundles npm (and
# conflicts with Debian's npm package); only install Debian's when none is there.
if [ "$level" != build ] && ! command -v npm >/dev/null 2>&1; then pkgs+=(nodejs npm); fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
