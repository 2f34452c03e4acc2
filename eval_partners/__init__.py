"""Evaluation-partner sets shipped with zsceval (data), installed as ``zsceval.partner_sets``.

``index.yaml`` lists the sets (name, version, layout, split, provenance, checksums); each set is one
folder under ``sets/<name>/v<version>/<split>/``. See README.md and
:mod:`zsceval.evaluation.shipped_sets`.
"""
