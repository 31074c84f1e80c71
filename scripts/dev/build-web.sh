#!/usr/bin/env bash
# Builds the page's WebAssembly: flinch-wasm (release, wasm32) -> wasm-bindgen --target web -> www/pkg/
# (git-ignored), then shrinks it with wasm-opt from the npm package binaryen@132.0.0 when that is installed
# (tests/browser/node_modules; `npm ci` there). Never Debian's binaryen 108: it breaks the output.
# Usage: scripts/dev/build-web.sh [--no-opt]
set -euo pipefail
cd "$(dirname "$0")/../.."

want=0.2.130
if ! wasm-bindgen --version 2>/dev/null | grep -qx "wasm-bindgen $want"; then
  echo "build-web: wasm-bindgen $want not found; run scripts/setup.sh --browser" >&2
  exit 1
fi

# simd128 (Chromium 91+, Firefox 89+, Safari 16.4+): the JSON scanner's byte searches take 16 bytes
# per step (core/src/json/classify.rs); ~27% fewer instructions in the analysis worker
# (BENCHMARKS.md, "Browser"). Without it the core builds its SWAR path.
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=+simd128" cargo build --target wasm32-unknown-unknown --release -p flinch-wasm
target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
wasm="$target_dir/wasm32-unknown-unknown/release/flinch_wasm.wasm"

rm -rf www/pkg
wasm-bindgen --target web --no-typescript --out-dir www/pkg "$wasm"

opt=tests/browser/node_modules/.bin/wasm-opt
if [[ "${1:-}" != "--no-opt" && -x "$opt" ]]; then
  before=$(stat -c %s www/pkg/flinch_wasm_bg.wasm)
  # -O3 rather than -Oz: the page is about throughput, and the file is small either way.
  "$opt" -O3 --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-simd www/pkg/flinch_wasm_bg.wasm -o www/pkg/flinch_wasm_bg.wasm
  echo "build-web: wasm-opt -O3: $before -> $(stat -c %s www/pkg/flinch_wasm_bg.wasm) bytes"
else
  echo "build-web: wasm-opt skipped ($opt not installed or --no-opt)"
fi
ls -l www/pkg
