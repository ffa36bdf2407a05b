"""Sphinx settings of the guides (docs/, Markdown read by MyST). `make guide` builds them
strictly (-W -n: a broken link, reference or include fails the build) into api/guide/,
which the service serves at /guide and the wheel carries (pyproject's package-data)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).parent / "_ext")]

project = "MemoRace"
author = "the MemoRace developers"
extensions = ["myst_parser", "openapi_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "_templates"]
templates_path = ["_templates"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
# Code blocks say whether a test runs them (sh, bash) or not (text): no highlighting
# guesses; Pygments knows all three.
highlight_language = "text"
html_theme = "alabaster"
html_title = "MemoRace guides"
html_theme_options = {"nosidebar": False, "show_relbars": True}
html_sidebars = {"**": ["navigation.html", "relations.html", "searchbox.html"]}
html_show_sourcelink = False
html_copy_source = False
# The service serves the guide under a strict policy (api/routes/guide.py): no inline script.
html_permalinks = True
# The trace format page shows JSON with comments: a highlighting failure is no broken link.
suppress_warnings = ["misc.highlighting_failure"]
