"""Sphinx configuration: the documentation is built from the INSTALLED package.

Build (from the repository root, after ``python -m pip install ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
    python -m sphinx -W --keep-going -b doctest docs docs/_build/doctest
    python -m pytest --doctest-glob="*.md" -o doctest_optionflags="ELLIPSIS NORMALIZE_WHITESPACE" docs README.md
"""

import dpfast

project = "dpfast"
author = "dpfast developers"
copyright = "2026, dpfast developers"
release = dpfast.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "sphinx.ext.napoleon",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", ".venv"]

# numpy-style docstrings through napoleon: numpydoc drops sections it does not know,
# and every mechanism's docstring has "Privacy" and "Accuracy" sections (STYLE.md).
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_custom_sections = ["Privacy", "Accuracy", "Streaming"]

autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_typehints = "none"
autodoc_member_order = "bysource"

myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# Doctests: every page's examples run against the installed package.
# the examples seed their generators for reproducible output, on purpose: silence the
# InsecureRandomnessWarning they would print (docs/getting-started.md says why)
doctest_global_setup = (
    "import numpy as np\nimport dpfast\nimport warnings\n"
    "warnings.simplefilter('ignore', dpfast.InsecureRandomnessWarning)"
)

html_theme = "alabaster"
html_title = f"dpfast {release}"
