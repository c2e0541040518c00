#!/usr/bin/env bash
# The GPU check: every package's CUDA-marked tests, on a machine with an NVIDIA GPU and CuPy,
# run from the source folders (no install), with EMBER_REQUIRE_GPU=1 so that a CUDA case that
# cannot reach the GPU fails instead of skipping. Then one epoch of the training demo on CUDA.
#
#   tools/gpu_check.sh [extra pytest arguments]
#
# Logs go to $GPU_CHECK_LOGS (default ./gpu-check): env.log, one pytest_*.log per test folder,
# demo.log and the demo's run folder.
# (pytest-benchmark, where installed, is switched off: beside xdist it warns, and the
# project turns warnings into errors)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
LOGS=${GPU_CHECK_LOGS:-$ROOT/gpu-check}
mkdir -p "$LOGS"
PYTHONPATH=$(printf '%s:' "$ROOT"/packages/*/src)
export PYTHONPATH EMBER_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/ember-numba-cache}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
python3 - <<'PY' 2>&1 | tee "$LOGS/env.log"
import cupy, numpy, numba, sys
print("python", sys.version.split()[0], "numpy", numpy.__version__, "numba", numba.__version__,
      "cupy", cupy.__version__, "devices", cupy.cuda.runtime.getDeviceCount(),
      cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
PY
status=0
# One pytest run per test folder that has CUDA cases, as tox runs them (each folder has its own
# conftest), the tensor core first; each folder gets at most GPU_CHECK_FOLDER_S seconds.
folders=$(grep -rlE "DEVICES|CUDA_ONLY|mark\.cuda" packages/*/tests tests | xargs -n1 dirname \
          | sort -u | sort -s -t/ -k2,2 -k1,1 | awk '/tensor/ {print; next} {rest = rest $0 "\n"} END {printf "%s", rest}')
for dir in $folders; do
    name=$(echo "$dir" | tr / _)
    timeout "${GPU_CHECK_FOLDER_S:-300}" python3 -m pytest -p no:cacheprovider -m cuda ${GPU_CHECK_PYTEST_ARGS--n 12 --timeout 120 -p no:benchmark} --tb=short \
        "$@" "$dir" > "$LOGS/pytest_$name.log" 2>&1
    rc=$?
    # 5: nothing selected (a folder without CUDA cases)
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then status=1; fi
    echo "== $dir: exit $rc"; grep -E "^(FAILED|ERROR)|passed|failed" "$LOGS/pytest_$name.log" | tail -n 40
done
timeout 120 python3 examples/train_digits_cnn.py --device cuda --epochs 1 \
    --out "$LOGS/demo" > "$LOGS/demo.log" 2>&1
echo "demo exit $?"; tail -n 5 "$LOGS/demo.log"
exit "$status"
