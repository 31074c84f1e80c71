#!/usr/bin/env bash
# Installs what the tests need on a fresh machine. Idempotent: each step is skipped when done.
# Usage: scripts/setup.sh [--browser]   (--browser adds wasm-bindgen-cli, Chromium and npm packages)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== setup: %s\n' "$*"; }

step "rust targets and components"
rustup target add wasm32-unknown-unknown thumbv7em-none-eabihf >/dev/null
rustup component add rustfmt clippy >/dev/null 2>&1 || true
