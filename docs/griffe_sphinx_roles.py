"""Griffe extension: show the Sphinx roles of the docstrings as code.

Many docstrings name other objects with Sphinx's roles (:func:`iqm`,
:class:`~zsceval.rl.policy.Policy`); Markdown has no such roles, so mkdocstrings would print the
role itself. This extension rewrites each role to inline code with the name Sphinx would show: the
whole target, or only its last part after a leading `~`.

mkdocs.yml loads it (`plugins.mkdocstrings.handlers.python.options.extensions`);
tests/test_docs_site.py tests it.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|data|attr|exc|obj|const):`(~?)([^`]+)`")


def plain(text: str) -> str:
    """`text` with every Sphinx role replaced by inline code, e.g. ':func:`~a.b`' -> '`b`'."""

    def code(match: re.Match) -> str:
        short, target = match.groups()
        return f"`{target.rsplit('.', 1)[-1] if short else target}`"

    return ROLE.sub(code, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring of a loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite the docstrings of `pkg` and of everything defined in it (listed after
        `MappedSubpackages` in mkdocs.yml, so that grafted sub-packages are included)."""
        _rewrite(pkg)


def _rewrite(obj: griffe.Object) -> None:
    if obj.docstring is not None:
        obj.docstring.value = plain(obj.docstring.value)
    for member in obj.members.values():
        if not member.is_alias:
            _rewrite(member)
