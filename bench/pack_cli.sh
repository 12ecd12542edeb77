#!/usr/bin/env bash
# Packs the CLI built here (with CUDA and ITK), the validation matrix's tool (validate_params,
# when built) and every shared library they load into .device/cli.tgz, for the device machine,
# which has no ITK: unpack with
#   tar xzf .device/cli.tgz -C /tmp && export LD_LIBRARY_PATH=/tmp/cli/lib
# (the C library and the CUDA driver stay the device's own).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
stage=$(mktemp -d)
mkdir -p "$stage/cli/lib" "$root/.device"
cp "$build/ctdenoise" "$stage/cli/"
binaries=("$build/ctdenoise")
if [[ -x $build/validate_params ]]; then
  cp "$build/validate_params" "$stage/cli/"
  binaries+=("$build/validate_params")
fi
ldd "${binaries[@]}" | awk '/=> \// {print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcuda.so*) ;;
    *) cp -L "$lib" "$stage/cli/lib/" ;;
  esac
done
tar czf "$root/.device/cli.tgz" -C "$stage" cli
rm -rf "$stage"
ls -la "$root/.device/cli.tgz"
