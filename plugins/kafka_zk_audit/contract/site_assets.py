"""The Data Docs site's vendored front-end assets: which npm files, at which pinned versions, and where a site keeps
them (``<site>/static/vendor/<name>@<version>/<path>``).

The gate vendors them into the site (``gate.docs_assets``); the product's own pages (``report.page_style``) link to
the same copies. Pure data, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

VENDOR_DIR = PurePosixPath("static", "vendor")


@dataclass(frozen=True)
class Asset:
    """One file of an npm package, by the package's name, exact version and path inside its tarball."""

    package: str
    version: str
    path: str

    @property
    def spec(self) -> str:
        """``name@version``, the key in the lock file and the folder name under the assets dir."""
        return f"{self.package}@{self.version}"

    @property
    def rel(self) -> PurePosixPath:
        """Where the file sits below the assets dir and below ``<site>/static/vendor``."""
        return PurePosixPath(self.spec, self.path)


# Pinned versions. vega@5 / vega-lite@5 / vega-embed@6 are pinned to the newest release of that major at
# the time of pinning; the path is the package.json "jsdelivr" (= "unpkg") file that jsDelivr serves for
# the bare package URL (the fetcher's --update-lock checks that).
VEGA = "5.33.1"
VEGA_LITE = "5.23.0"
VEGA_EMBED = "6.29.0"
FONTAWESOME = "6.6.0"
JQUERY = "3.7.1"
POPPER = "1.12.9"
BOOTSTRAP = "4.3.1"
BOOTSTRAP_TABLE = "1.19.1"
