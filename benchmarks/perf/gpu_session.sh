#!/usr/bin/env bash
# The checks of a session lent a CUDA machine, in the order they matter, each under its own timeout
# so that one hang cannot eat the lease; about 10 minutes on an H200 (docs/performance.md, "The first
# GPU measurements"). Everything is also written to ${OUT:-.}/gpu_session.log.
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
# Steps: (1) the tests that run on CUDA when it is there; (2) the engine and PPO, eager and with the
# step compiled, against JaxMARL where it imports (gpu.py); (3) a tiny bench suite end to end with
# --device cuda; (4) policy-pool acting; (5) the SP learning bar on CUDA; (6) a profile of the
# compiled step at 4,096 games, where it is far from JaxMARL.
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

echo "=== 1. CUDA tests  $(date +%T)"
timeout 120 python3 -m pytest -p no:cacheprovider -o addopts="" -m "not slow" -q -rs -n 4 \
    tests/envs/test_env_api.py tests/envs/yokai/test_game.py tests/envs/test_compile.py \
    tests/rl/test_hardware.py tests/rl/test_compile_full.py 2>&1 | tail -6

echo "=== 2. engine and PPO (gpu.py)  $(date +%T)"
timeout 200 python3 benchmarks/perf/gpu.py --modes eager step --games 4096 65536 --ppo-games 4096 \
    --no-paper --seconds 2 --iterations 2 2>&1 | quiet

echo "=== 3. tiny bench suite on CUDA  $(date +%T)"
SUITE=$(mktemp --suffix .yaml)
cat > "$SUITE" <<'YAML'
name: gpu-tiny
seed: 0
layouts: [cramped_room]
algorithms: [sp, fcp]
ego_seeds: 1
ego_steps: 25600
preset: quick
overrides: [env.num_envs=16, run.eval_episodes=2, population.size=6, population.stage1_steps=12800]
partners:
  candidates: 3
  candidate_steps: 25600
  checkpoints: 2
  feature_episodes: 2
  k: 2
  mid_br_steps: 12800
  dpp_samples: 50
  min_return: -1
evaluation:
  episodes: 2
YAML
timeout 240 python3 -m zsceval.cli bench --suite "$SUITE" --out /tmp/gpu-tiny-bench --device cuda --no-progress 2>&1 \
    | quiet | tail -15

echo "=== 4. policy-pool acting  $(date +%T)"
timeout 45 python3 benchmarks/perf/pool_acting.py --device cuda --seconds 1 --rounds 3 2>&1 | tail -8

echo "=== 5. SP learning bar on CUDA  $(date +%T)"
timeout 70 python3 benchmarks/learning/sp.py --layouts cramped_room --seeds 0 --set run.device=cuda 2>&1 | tail -3

echo "=== 6. where a 4,096-game step's time goes (step_profile.py)  $(date +%T)"
timeout 90 python3 benchmarks/perf/step_profile.py --device cuda --games 4096 2>&1 | quiet
echo "=== 7. the value-based core: VDN and a TBS pool of 10 pairs (value_core.py)  $(date +%T)"
timeout 90 python3 benchmarks/perf/value_core.py --layout counter_circuit --pairs 10 --iterations 40 \
    --set run.device=cuda 2>&1 | quiet
echo "=== end  $(date +%T)"
