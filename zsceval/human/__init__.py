"""Human data: the 2019 human-human Overcooked trials of Carroll et al. (see docs/human-data.md).

``load_trials`` reads them (from the PyPI sdist ``overcooked-ai==1.1.0``, installed with
``pip install --no-deps overcooked-ai==1.1.0``) as :class:`Trial` objects of our layouts, states
and actions; :mod:`zsceval.human.replay` checks that our engine reproduces every recorded
transition the reference simulator reproduces.
"""

from .trials import HUMAN_LAYOUTS, HumanDataMissing, Trial, check_layout, find_data_dir, load_trials

__all__ = ["HUMAN_LAYOUTS", "HumanDataMissing", "Trial", "check_layout", "find_data_dir", "load_trials"]
