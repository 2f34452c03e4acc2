"""mkdocs hook: resolve a notebook's links to other pages of the site, and fail on a broken one.

mkdocs rewrites `page.md` links in Markdown pages, but mkdocs-jupyter hands a notebook over as HTML,
so `[quick start](quick-start.md)` in docs/tutorial.ipynb (a link that works where the notebook is
read beside the other docs, on GitHub or in Jupyter) would point at a file that is not in the site.
This hook turns such links into the target page's URL and raises (failing `mkdocs build`) for a
target that is not a page of the site. mkdocs.yml loads it under `hooks`.
"""

from __future__ import annotations

import re

from mkdocs.exceptions import PluginError
from mkdocs.utils import get_relative_url

_LINK = re.compile(r'href="(?!https?:|#|/)([^"#]+\.md)(#[^"]*)?"')
_files = None


def on_files(files, config):
    """Keep the site's files for the link look-ups."""
    global _files
    _files = files
    return files


def on_post_page(output, page, config):
    """Rewrite a notebook page's `X.md` links to the URLs of those pages."""
    if not page.file.src_uri.endswith(".ipynb"):
        return output

    def resolve(match: re.Match) -> str:
        target = _files.get_file_from_path(match.group(1)) if _files is not None else None
        if target is None or not target.is_documentation_page():
            raise PluginError(
                f"{page.file.src_uri} links to {match.group(1)}, which is not a page of the site"
            )
        return f'href="{get_relative_url(target.url, page.url)}{match.group(2) or ""}"'

    return _LINK.sub(resolve, output)
