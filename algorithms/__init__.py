"""The algorithm layer: the built-in plug-ins (SP, FCP, MEP, TrajeDi, HSP, COLE, E3T, TBS, and their
stages), each registered through the ``zsceval.algorithms`` entry-point group like a third-party one.

:mod:`zsceval.algorithms.base` holds the two-stage population bases (stage 1: a population trained
together; stage 2: an ego trained against its pool); :mod:`zsceval.algorithms.tbs` is one method in
its own package. Plug-ins import the RL core and the evaluation layer, never each other except
through ``base`` (and MEP's stage 1, which HSP and COLE reuse as the papers do). Nothing below this
layer imports it (``.importlinter``).
"""
