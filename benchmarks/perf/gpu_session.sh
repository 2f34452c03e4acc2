#!/usr/bin/env bash
# The checks of a session lent a CUDA machine, in the order they matter, each under its own timeout
# so that one hang cannot eat the lease; the whole under 10 minutes (the timeouts sum to 550 s).
# Everything is written to ${OUT:-.}/gpu_session.log, and one line per step (its exit status,
# seconds and last result line) to ${OUT:-.}/summary.txt.
#
#   bash benchmarks/perf/gpu_session.sh            # zsceval and its dependencies already installed
#   bash benchmarks/perf/gpu_session.sh --wheels   # a bare machine: install the wheels in .whl/ first
#
# --wheels: .whl/ holds a wheel of this checkout (`pip wheel --no-deps --no-build-isolation -w .whl .`)
# and those of the dependencies the machine lacks (e.g. gymnasium, farama-notifications, dppy; jaxmarl
# for the JaxMARL column). They go to /tmp/site, and the checkout's zsceval/ is moved aside so that
# the installed package, with its entry points and package data, is the one imported. Use it only on
# a throw-away copy of the repository.
#
# Size: with the shipped partner sets (eval_partners/sets, 75 MB) the repository is over the device
# tool's 64 MiB. Build the wheel from a clone without them (`rm -rf eval_partners/sets` there), and
# keep them from travelling for the session's calls (`git rm -r -q --cached eval_partners/sets` and
# `/eval_partners/sets/` in .git/info/exclude; afterwards `git reset -q -- eval_partners/sets`).
#
# Steps: (1) the tests that run on CUDA when it is there, and the compiled-rollout and stacked-phase
# equality tests; (2) `run.compile: rollout` on CUDA, with and without CUDA graphs, against `off`
# (rollout_graph.py: rates, loss differences, inductor's cudagraph skips); (3) the engine and PPO
# against JaxMARL in the same call, at 4,096 and 65,536 games (gpu.py: eager, step, rollout);
# (4) the stacked candidate phase of one layout at full width (forced_coordination: its 30
# candidates, the paper preset's 100 games each) for one iteration, stacked one by one and stacked with
# vmapped acting and updates (--vmap: zsceval.rl.stacked_acting, stacked_update), with the hours of
# the suite's 1e7 env steps per candidate extrapolated (stacked_phase.py); (5) the paper
# preset's PPO rows (float32 and bf16), eager and rollout, each with its collection's share of the time (gpu.py).
set -uo pipefail
LOG="${OUT:-.}/gpu_session.log"
exec > >(tee "$LOG") 2>&1
export PYTHONUNBUFFERED=1
if [ "${1:-}" = "--wheels" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
    [ -d zsceval ] && mv zsceval /tmp/zsceval-checkout-aside
fi
python3 -c "import torch, zsceval; print('torch', torch.__version__, '| zsceval', zsceval.__file__, '|',
    torch.cuda.get_device_name() if torch.cuda.is_available() else 'NO CUDA')" || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null
quiet() { grep -v "ubmoduled\|^    %\|^W[0-9]\|cudagraph_utils"; }  # JaxMARL's banner, inductor's graph dumps

SUMMARY="${OUT:-.}/summary.txt"
: > "$SUMMARY"
# step NAME SECONDS COMMAND...: run under a timeout, log it, and add one line to the summary
step() {
    local name="$1" limit="$2"; shift 2
    echo "=== $name  $(date +%T)"
    local t0=$SECONDS out rc
    out=$(mktemp)
    timeout "$limit" "$@" 2>&1 | quiet | tee "$out"
    rc=${PIPESTATUS[0]}
    printf '%-34s rc=%-3s %4ss  %s\n' "$name" "$rc" "$((SECONDS - t0))" "$(grep -v '^\s*$' "$out" | tail -1)" >> "$SUMMARY"
}

step "1. CUDA and equality tests" 75 python3 -m pytest -p no:cacheprovider -o addopts="" -m "not slow" -q -rs -n 4 \
    tests/envs/test_env_api.py tests/envs/test_compile.py tests/rl/test_hardware.py tests/rl/test_compile_full.py \
    tests/rl/test_compiled_rollout.py tests/rl/test_stacked_phase.py

step "2. run.compile=rollout on CUDA" 85 python3 benchmarks/perf/rollout_graph.py --device cuda --games 4096 --graph-steps 4 \
    --iterations 3

step "3. engine and PPO vs JaxMARL" 120 python3 benchmarks/perf/gpu.py --modes eager step rollout \
    --games 4096 65536 --ppo-games 4096 --no-paper --seconds 2 --iterations 2

# one iteration of every candidate (100 games x 400 steps each); the suite trains 1e7 env steps each
step "4a. candidate phase, stacked" 85 python3 benchmarks/perf/stacked_phase.py --device cuda --preset paper \
    --layout forced_coordination --members 30 --games 100 --steps 40000 --workers 1 --stack --extrapolate 10000000
step "4b. candidate phase, vmapped" 85 python3 benchmarks/perf/stacked_phase.py --device cuda --preset paper \
    --layout forced_coordination --members 30 --games 100 --steps 40000 --workers 1 --stack --vmap \
    --extrapolate 10000000

step "5. paper preset PPO" 100 python3 benchmarks/perf/gpu.py --modes eager rollout --games 4096 --ppo-games \
    --seconds 1 --iterations 1

echo "=== summary  $(date +%T)"
cat "$SUMMARY"
