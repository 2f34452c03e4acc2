"""Model plug-ins shipped with zsceval (``model.kind``; registered in the entry-point group
``zsceval.models``, see :mod:`zsceval.rl.networks`)."""
