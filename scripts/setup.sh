#!/usr/bin/env bash
# Installs what the tests need on a fresh machine. Idempotent: each step is skipped when done.
# Usage: scripts/setup.sh [--browser]   (--browser adds wasm-bindgen-cli, Chromium and npm packages)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== setup: %s\n' "$*"; }

step "rust targets and components"
rustup target add wasm32-unknown-unknown thumbv7em-none-eabihf >/dev/null
rustup component add rustfmt clippy >/dev/null 2>&1 || true

step "nightly toolchain and cargo-fuzz 0.13.2 (fuzz targets, scripts/fuzz.sh)"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
if [[ $(cargo fuzz --version 2>/dev/null) != *" 0.13.2"* ]]; then
    cargo install cargo-fuzz --version 0.13.2 --locked
fi
