"""Installable package `zsceval`: a toolkit for benchmarking zero-shot coordination (ZSC)."""

import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
VERSION = re.search(r'__version__ = "([^"]+)"', (HERE / "zsceval" / "__init__.py").read_text()).group(1)

# The documentation site (mkdocs.yml); also in the `test` extra, which builds it.
DOCS = [
    "mkdocs>=1.6,<2",
    "mkdocs-material>=9.5",
    "mkdocstrings[python]>=0.26",
    "mkdocs-gen-files>=0.5",
    "mkdocs-literate-nav>=0.6",
    "mkdocs-jupyter>=0.25",
]

setup(
    name="zsceval",
    version=VERSION,
    description="Zero-shot coordination benchmark: batched Overcooked, MAPPO core, ZSC-Eval evaluation",
    long_description=(HERE / "README.md").read_text(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    license="MIT",
    license_files=["LICENSE"],
    # The core is zsceval/; its built-in algorithm plug-ins (algorithms/) and its data (layouts/,
    # benchmarks/suites/, eval_partners/) are top-level folders installed inside the package.
    # zsceval/algorithms is a link to algorithms/ (so tools that read the package from its folder,
    # import-linter and griffe, see the plug-ins); the build takes them from algorithms/ instead.
    packages=find_packages(
        include=["zsceval", "zsceval.*"], exclude=["zsceval.algorithms", "zsceval.algorithms.*"]
    )
    + ["zsceval." + p for p in find_packages(include=["algorithms", "algorithms.*"])]
    + ["zsceval.layouts", "zsceval.suites", "zsceval.partner_sets"],
    package_dir={
        # zsceval.algorithms, .base and .tbs: the built-in plug-ins, declared below as a third
        # party's would be (entry points); subpackages follow the mapping (algorithms/base, ...).
        "zsceval.algorithms": "algorithms",
        "zsceval.layouts": "layouts",
        "zsceval.suites": "benchmarks/suites",
        # Shipped evaluation-partner sets: index.yaml, the acting-only test split of each set's newest
        # version (shipped/) and the test splits' manifests (manifests/). The full sets (sets/) are
        # not installed: `zsceval partners fetch` downloads them (docs/partner-sets.md); nor are the
        # working folders `zsceval partners generate` leaves in eval_partners/<layout>.
        "zsceval.partner_sets": "eval_partners",
    },
    package_data={
        "zsceval.layouts": ["*.layout", "*.md"],
        "zsceval.suites": ["*.yaml"],
        "zsceval.partner_sets": ["index.yaml", "*.md", "shipped/**/*", "manifests/**/*", "human/**/*"],
        "zsceval": ["presets/*.yaml", "generation/grids/*.yaml", "bench/reference/*.yaml"],
    },
    install_requires=[
        "torch>=2.4",
        "gymnasium>=1.0",
        "numpy>=1.24",
        "click>=8.1",
        "pyyaml>=6.0",
        "tqdm>=4.60",
        "safetensors>=0.4",
        "scipy>=1.10",
        "pandas>=2.0",
        "pyarrow>=12",
        "dppy>=0.3.2",
        "matplotlib>=3.7",
        "seaborn>=0.13",
        # pooch: `zsceval partners fetch` downloads the partner sets the wheel does not carry.
        "pooch>=1.7",
    ],
    extras_require={
        # rliable: its probability of improvement is the reference value of a statistics test.
        # pettingzoo: the interop tests run PettingZoo's conformance tests on the adapter.
        # flask: the browser-play tests (zsceval play). import-linter: the layer contracts (.importlinter).
        # pytest-xdist: the suite runs one worker per core (pyproject.toml's addopts); filelock: its
        # workers share one run of the tiny bench (tests/evaluation/conftest.py).
        "test": [
            "pytest>=7",
            "ruff>=0.4",
            "rliable>=1.2,<1.3",
            "pettingzoo>=1.24",
            "flask>=3.0",
            "import-linter>=2.1",
            "pytest-xdist>=3.5",
            "filelock>=3.12",
            # cffconvert: the CITATION.cff schema check (tests/test_release_files.py).
            "cffconvert>=2.0",
            # build, twine: .ci/run builds the sdist and wheel and checks them.
            "build>=1.0",
            "twine>=5.0",
            # The strict documentation build (tests/test_docs_site.py) and the tutorial notebook's
            # run (tests/test_tutorial.py): the `docs` extra and a Jupyter kernel.
            *DOCS,
            "nbclient>=0.10",
            "ipykernel>=6.29",
            # submitit: the SLURM executor's tests run its local executor (tests/execution).
            "submitit>=1.5",
        ],
        # The documentation site (mkdocs.yml): `mkdocs serve` / `mkdocs build --strict`.
        "docs": DOCS,
        # The reference simulator used by the parity tests (PyPI `overcooked`, old_dynamics flag).
        "reference": ["overcooked==0.2.1"],
        # JaxMARL's Overcooked, for the observation parity test of zsceval.interop.jaxmarl
        # (tests/interop/test_jaxmarl_parity.py); the adapter itself needs NumPy only. Not in `test`:
        # it pulls jax and pins gymnasium below the release the rest of the suite uses.
        "jaxmarl": ["jaxmarl>=0.2"],
        "ray": ["ray>=2.9"],
        # The PettingZoo ParallelEnv adapter (zsceval.interop.parallel).
        "interop": ["pettingzoo>=1.24"],
        # Metric loggers of run.loggers (zsceval/rl/loggers.py), imported only when a run names them.
        "tensorboard": ["tensorboard>=2.12"],
        "wandb": ["wandb>=0.19.10"],
        # The MLflow tracking client (mlflow-skinny: no server or UI); `pip install mlflow` for those.
        "mlflow": ["mlflow-skinny>=2.9"],
        # `zsceval bench --executor slurm` (zsceval/execution/slurm.py).
        "slurm": ["submitit>=1.5"],
        # `zsceval play`: playing an agent in the browser.
        "play": ["flask>=3.0"],
        # Google Research Football (zsceval.envs.football). gfootball builds its C++ engine from
        # source: first the Debian packages and build tools of docs/football.md, then
        # `pip install wheel psutil six "gym<0.26"` and `pip install --no-build-isolation -e ".[football]"`.
        "football": ["gfootball==2.10.2", "gym<0.26", "psutil>=5.9"],
    },
    # Every registry is filled from these groups (zsceval/plugins.py); a third-party plug-in
    # declares the same groups. Name = registry name, value = the object (suites: a package of YAML).
    entry_points={
        "console_scripts": ["zsceval=zsceval.cli:main"],
        "zsceval.algorithms": [
            "biased = zsceval.algorithms.biased:Biased",
            "br = zsceval.algorithms.br:BestResponse",
            "cole = zsceval.algorithms.cole:COLE",
            "e3t = zsceval.algorithms.e3t:E3T",
            "fcp = zsceval.algorithms.fcp:FCP",
            "fcp-stage1 = zsceval.algorithms.fcp:FCPStage1",
            "hsp = zsceval.algorithms.hsp:HSP",
            "mep = zsceval.algorithms.mep:MEP",
            "mep-stage1 = zsceval.algorithms.mep:MEPStage1",
            "op = zsceval.algorithms.op:OP",
            "sp = zsceval.algorithms.sp:SelfPlay",
            "tbs = zsceval.algorithms.tbs.stages:TBS",
            "tbs-br = zsceval.algorithms.tbs.stages:TBSBestResponses",
            "tbs-pool = zsceval.algorithms.tbs.stages:TBSPool",
            "trajedi = zsceval.algorithms.trajedi:TrajeDi",
            "trajedi-stage1 = zsceval.algorithms.trajedi:TrajeDiStage1",
            "vdn = zsceval.algorithms.vdn:VDN",
        ],
        "zsceval.agents": [
            "epsilon_mixture = zsceval.algorithms.e3t:EpsilonMixtureAgent",
            "human-proxy = zsceval.human.proxy:HumanProxy",
            "interdep_probe = zsceval.interdependence.probe:ScriptedProbe",
            "mixture = zsceval.rl.population.mixture:MixtureAgent",
            "ppo = zsceval.rl.policy:Policy",
            "q = zsceval.rl.qpolicy:QPolicy",
            "tbs = zsceval.algorithms.tbs.agents:TBSAgent",
            "tbs-cbpr = zsceval.algorithms.tbs.agents:CBPRAgent",
            "tbs-cem = zsceval.algorithms.tbs.agents:CEMAgent",
            "tbs-hypothesis = zsceval.algorithms.tbs.hypothesis:HypothesisAgent",
            "tbs-random = zsceval.algorithms.tbs.agents:RandomSelectionAgent",
            "tbs-tom = zsceval.algorithms.tbs.tom:ToMModel",
            "unhelpful-random = zsceval.evaluation.strata:UniformRandomAgent",
            "unhelpful-stay = zsceval.evaluation.strata:StayAgent",
        ],
        "zsceval.models": [
            "yokai-relational = zsceval.rl.models.yokai:YokaiRelational",
        ],
        "zsceval.cores": [
            "ppo = zsceval.rl.ppo:PPOCore",
            "pqn = zsceval.rl.pqn:PQNCore",
        ],
        "zsceval.envs": [
            "football = zsceval.envs.builtin:make_football",
            "overcooked = zsceval.envs.builtin:make_overcooked",
            "toy = zsceval.envs.builtin:make_toy",
            "yokai = zsceval.envs.builtin:make_yokai",
        ],
        "zsceval.jobs": [
            "candidate.evaluate = zsceval.generation.pipeline:candidate_evaluate",
            "ego.evaluate = zsceval.evaluation.ego_evaluation:ego_evaluate",
            "ego.human_proxy = zsceval.evaluation.human_proxy:ego_human_proxy",
            "ego.unhelpful = zsceval.evaluation.strata:ego_unhelpful",
            "partners.human_proxy = zsceval.evaluation.human_proxy:partners_human_proxy",
            "partners.manifest = zsceval.generation.pipeline:partners_manifest",
            "partners.select = zsceval.generation.pipeline:partners_select",
            "partners.shipped = zsceval.evaluation.shipped_sets:partners_shipped",
            "tbs.brs = zsceval.algorithms.tbs.jobs:best_responses_job",
            "tbs.cluster = zsceval.algorithms.tbs.jobs:cluster_job",
            "tbs.ego = zsceval.algorithms.tbs.jobs:ego_job",
            "tbs.evaluate = zsceval.algorithms.tbs.jobs:evaluate_job",
            "train = zsceval.training.jobs:train_job",
        ],
        "zsceval.loggers": [
            "csv = zsceval.rl.loggers:CSVLogger",
            "mlflow = zsceval.rl.loggers:MLflowLogger",
            "tensorboard = zsceval.rl.loggers:TensorBoardLogger",
            "wandb = zsceval.rl.loggers:WandbLogger",
        ],
        "zsceval.suites": ["zsceval = zsceval.suites"],
        # Evaluation-partner sets: name = the label of `label:set@version/split`, value = a package
        # whose folder holds index.yaml (zsceval/evaluation/shipped_sets.py).
        "zsceval.partner_sets": ["zsceval = zsceval.partner_sets"],
        # Blocks of `zsceval report`: name = the section, value = a zsceval.plugins.ReportSection.
        "zsceval.report_sections": [
            "tbs = zsceval.algorithms.tbs.report:TBSSection",
            "yokai = zsceval.evaluation.yokai_xp:YokaiCrossPlaySection",
            "yokai-games = zsceval.evaluation.yokai_games:YokaiGamesSection",
        ],
    },
)
