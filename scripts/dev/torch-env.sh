#!/usr/bin/env bash
# Makes the PyTorch virtual environment of the real-PyTorch step tests (tests/torch/run.sh).
# Usage: scripts/dev/torch-env.sh [DIR]   (default: $FLINCH_TORCH_ENV or target/torch-env)
# Idempotent: a venv at DIR whose `import torch` works is reused as it is. Otherwise the venv is made anew
# and `pip install torch` runs into it from the configured package index: the default wheel, which carries the
# CUDA libraries (about 5 GB unpacked, a few minutes); the tests only use its CPU side. Kept under target/ so it
# is cached between runs and never committed.
set -euo pipefail
cd "$(dirname "$0")/../.."

ENV_DIR="${1:-${FLINCH_TORCH_ENV:-target/torch-env}}"

if "$ENV_DIR/bin/python" -W ignore -c 'import torch' 2>/dev/null; then
  echo "present: $ENV_DIR (torch $("$ENV_DIR/bin/python" -W ignore -c 'import torch; print(torch.__version__)'))"
  exit 0
fi

echo "making $ENV_DIR: python3 -m venv, then pip install torch (large: about 5 GB with its CUDA libraries)"
if ! python3 -m venv --clear "$ENV_DIR"; then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv
  python3 -m venv --clear "$ENV_DIR"
fi
start=$(date +%s)
"$ENV_DIR/bin/pip" install -q --disable-pip-version-check torch
"$ENV_DIR/bin/python" -W ignore -c 'import torch; print("installed: torch", torch.__version__)'
echo "pip install torch took $(( $(date +%s) - start )) s; $ENV_DIR is $(du -sh "$ENV_DIR" | cut -f1)"
