"""Make the Great Expectations Data Docs site work offline.

GX 1.24.1 renders Data Docs pages that load jQuery, Bootstrap, bootstrap-table, Vega, Font Awesome etc.
from public CDNs; without them the index page's tables (built by bootstrap-table) stay empty. GX cannot
be told to use other URLs (its own templates win over ``custom_views_directory``), so the gate
post-processes the generated HTML instead: :func:`localize` copies the pinned files into
``<site>/static/vendor/`` and points every page's ``<script src>`` / stylesheet ``<link href>`` at them with
paths relative to the page. GX's logo (loaded from GX's bucket) and favicon (a folder too high on validation pages)
are pointed at the site's own copies in ``static/images/``.

The files are the exact npm packages behind those CDN URLs (``CDN_ASSETS``), fetched once at set-up by
``scripts/fetch_docs_assets.py`` from the npm registry, checked against ``docs_assets.lock.json`` (sha512
``dist.integrity``), into ``<dir>/<package>@<version>/`` (default ``plugins/kafka_zk_audit/gate/vendor/``, or
``$KAFKA_ZK_AUDIT_DOCS_ASSETS``); :func:`is_fetched` says whether that fetch is complete for the current pins.

CLI: ``python -m kafka_zk_audit.gate.docs_assets localize SITE_DIR [--assets D]``.
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import importlib.util
import json
import logging
import os
import posixpath
import re
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from kafka_zk_audit.contract.site_assets import (
    BOOTSTRAP,
    BOOTSTRAP_TABLE,
    FONTAWESOME,
    JQUERY,
    POPPER,
    VEGA,
    VEGA_EMBED,
    VEGA_LITE,
    VENDOR_DIR,
    Asset,
)

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
LOCK_FILE = HERE / "docs_assets.lock.json"
DEFAULT_ASSETS_DIR = HERE / "vendor"
ASSETS_DIR_ENV = "KAFKA_ZK_AUDIT_DOCS_ASSETS"  # overrides DEFAULT_ASSETS_DIR
MARKER = ".complete"
IMAGES_DIR = PurePosixPath("static", "images")  # GX copies its package's static/images there
# GX's navbar loads its logo (with the time and the data context's id in the query) from this bucket, and its dark
# style a white logo: the logo comes from the site's own copy; the white one, in no package, is left out.
GX_IMAGES_URL = "https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/"
GX_LOGO = "logo-long.png"
FETCH_COMMAND = "python scripts/fetch_docs_assets.py fetch"  # in the kafka-zk-audit repo, or `make setup`
FETCH_HINT = f"Data Docs keep CDN links; run `{FETCH_COMMAND}` for offline docs"



DATEPICKER = "1.9.0"
BOOTSTRAP_DARK = "1.1.0"

_JSDELIVR, _UNPKG = "https://cdn.jsdelivr.net/npm", "https://unpkg.com"
_CDNJS = "https://cdnjs.cloudflare.com/ajax/libs"
_BT_FILTER = "dist/extensions/filter-control/bootstrap-table-filter-control"


def _package(package: str, version: str, files: dict[str, str]) -> dict[str, Asset]:
    """``{CDN URL: Asset}`` of one pinned package, from ``{CDN URL: the file's path in the tarball}``."""
    return {url: Asset(package, version, path) for url, path in files.items()}


def _served(base: str, *paths: str, folder: str = "") -> dict[str, str]:
    """``{CDN URL: path in the tarball}`` for a CDN that serves the tarball's ``folder`` at ``base``."""
    return {f"{base}/{path}": f"{folder}{path}" for path in paths}


# Every CDN URL in GX 1.24.1's Data Docs templates (js_script_imports.j2, index_page.j2, page.j2,
# page_minimal.j2) that is a <script src> or a stylesheet <link href>. cdnjs and BootstrapCDN serve a
# package's dist/ folder, unpkg and versioned jsDelivr URLs the tarball as it is.
CDN_ASSETS: dict[str, Asset] = {
    **_package("vega", VEGA, {f"{_JSDELIVR}/vega@5": "build/vega.min.js"}),
    **_package("vega-lite", VEGA_LITE, {f"{_JSDELIVR}/vega-lite@5": "build/vega-lite.min.js"}),
    **_package("vega-embed", VEGA_EMBED, {f"{_JSDELIVR}/vega-embed@6": "build/vega-embed.min.js"}),
    # all.min.css loads ../webfonts/*: the package layout is kept, see EXTRA_PREFIXES.
    **_package("@fortawesome/fontawesome-free", FONTAWESOME,
               _served(f"{_CDNJS}/font-awesome/{FONTAWESOME}", "css/all.min.css")),
    **_package("jquery", JQUERY, {f"https://code.jquery.com/jquery-{JQUERY}.min.js": "dist/jquery.min.js"}),
    **_package("popper.js", POPPER, _served(f"{_CDNJS}/popper.js/{POPPER}", "umd/popper.min.js", folder="dist/")),
    **_package("bootstrap", BOOTSTRAP, {
        **_served(f"https://stackpath.bootstrapcdn.com/bootstrap/{BOOTSTRAP}", "js/bootstrap.min.js", folder="dist/"),
        **_served(f"https://maxcdn.bootstrapcdn.com/bootstrap/{BOOTSTRAP}", "css/bootstrap.min.css", folder="dist/"),
    }),
    # GX links the filter-control CSS of bootstrap-table 1.19.0 (and its JS of 1.19.1). Both are served
    # from the 1.19.1 tarball, which has the same two CSS files, so one tarball is enough.
    **_package("bootstrap-table", BOOTSTRAP_TABLE, {
        **_served(f"{_UNPKG}/bootstrap-table@{BOOTSTRAP_TABLE}", "dist/bootstrap-table.min.js",
                  "dist/bootstrap-table.min.css", f"{_BT_FILTER}.min.js"),
        **_served(f"{_UNPKG}/bootstrap-table@1.19.0", f"{_BT_FILTER}.css", f"{_BT_FILTER}.min.css"),
    }),
    **_package("bootstrap-datepicker", DATEPICKER, _served(
        f"{_CDNJS}/bootstrap-datepicker/{DATEPICKER}", "js/bootstrap-datepicker.min.js",
        "css/bootstrap-datepicker.min.css", folder="dist/")),
    **_package("@forevolve/bootstrap-dark", BOOTSTRAP_DARK, _served(
        f"{_JSDELIVR}/@forevolve/bootstrap-dark@{BOOTSTRAP_DARK}", "dist/css/bootstrap-prefers-dark.css")),
}

# Whole folders needed besides the files above (paths inside the tarball, after its top folder).
EXTRA_PREFIXES: dict[str, tuple[str, ...]] = {"@fortawesome/fontawesome-free": ("webfonts/",)}


def packages() -> dict[str, Asset]:
    """One representative :class:`Asset` per pinned ``name@version``, sorted by spec."""
    by_spec: dict[str, Asset] = {}
    for asset in CDN_ASSETS.values():
        by_spec.setdefault(asset.spec, asset)
    return dict(sorted(by_spec.items()))


def default_assets_dir() -> Path:
    """``$KAFKA_ZK_AUDIT_DOCS_ASSETS`` or ``plugins/kafka_zk_audit/gate/vendor``."""
    return Path(os.environ.get(ASSETS_DIR_ENV) or DEFAULT_ASSETS_DIR)


def marker_text() -> str:
    """What a complete fetch's marker holds: a digest of the lock and the file table, so a changed pin re-fetches."""
    digest = hashlib.sha256(LOCK_FILE.read_bytes())
    for url, asset in sorted(CDN_ASSETS.items()):
        digest.update(f"{url} {asset.rel}\n".encode())
    digest.update(json.dumps(EXTRA_PREFIXES, sort_keys=True).encode())
    return digest.hexdigest() + "\n"


def has_marker(folder: Path, text: str) -> bool:
    """Whether ``folder``'s marker file holds ``text`` (False when it cannot be read)."""
    try:
        return (folder / MARKER).read_text() == text
    except OSError:
        return False


def is_fetched(assets_dir: Path | None = None) -> bool:
    """Whether ``assets_dir`` holds a complete fetch for the current lock."""
    try:
        expected = marker_text()
    except OSError:  # no lock file
        return False
    return has_marker(assets_dir or default_assets_dir(), expected)


def write_atomic(dest: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so a present file is always complete."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, dest)


# --- localize -----------------------------------------------------------------------------------------

_TAG = re.compile(r"""<(script|link)\b(?:[^>"']|"[^"]*"|'[^']*')*>""", re.IGNORECASE)
_ATTR = re.compile(r"""\s([a-zA-Z_:][-\w:.]*)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'=<>`]+))?""")
_TAG_NAME = re.compile(r"<[a-zA-Z]+")
_STRIP_ATTR = re.compile(r"""\s+(?:integrity|crossorigin)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?""",
                         re.IGNORECASE)


def _attrs(tag: str) -> dict[str, re.Match[str]]:
    """The tag's attributes by lower-case name (first occurrence wins)."""
    found: dict[str, re.Match[str]] = {}
    name = _TAG_NAME.match(tag)
    for match in _ATTR.finditer(tag, name.end() if name else 0):
        found.setdefault(match.group(1).lower(), match)
    return found


def _unquote(raw: str | None) -> str:
    """An attribute value without its quotes."""
    if raw and raw[0] in "\"'" and raw[-1] == raw[0]:
        return raw[1:-1]
    return raw or ""


def _is_remote(url: str) -> bool:
    """Whether a URL points off the site (http, https or protocol-relative)."""
    return url.lower().startswith(("https://", "http://", "//"))


_GX_IMAGE = re.compile(re.escape(GX_IMAGES_URL) + r"""([\w.-]+)[^"'\s)]*""")
_SITE_IMAGE = re.compile(r"(?:\.\.?/)*" + re.escape(str(IMAGES_DIR)) + r"/([\w.-]+)")
_CSS_GX_IMAGE = re.compile(r"""url\(\s*(["']?)""" + _GX_IMAGE.pattern + r"""\1\s*\)""")


def rewrite_gx_images(html: str, images_prefix: str) -> str:
    """Point GX's logo at the site's copy (``images_prefix``: the relative URL of ``static/images/``), without the
    query that names the data context, and drop the stylesheet's background images from GX's bucket."""
    html = _CSS_GX_IMAGE.sub("none", html)
    return _GX_IMAGE.sub(lambda m: f"{images_prefix}{GX_LOGO}" if m.group(1) == GX_LOGO else m.group(0), html)


def rewrite_html(html: str, vendor_prefix: str, unknown: set[str] | None = None) -> str:
    """Point known CDN ``<script src>``/stylesheet ``<link href>`` URLs at ``vendor_prefix`` (a relative URL
    ending in ``/``) and drop those tags' ``integrity``/``crossorigin``; collect other remote ones in ``unknown``.
    GX's logo and favicon are pointed at the site's ``static/images/`` (next to ``static/vendor/``): GX loads the
    logo from its bucket (:func:`rewrite_gx_images`), and its validation pages look for the favicon a folder too high.
    """
    images = posixpath.normpath(posixpath.join(vendor_prefix, "..", "images")) + "/"

    def replace(match: re.Match[str]) -> str:
        tag, name = match.group(0), match.group(1).lower()
        attrs = _attrs(tag)
        if name == "link":
            rel = attrs.get("rel")
            rels = _unquote(rel.group(2)).lower().split() if rel else []
            href = attrs.get("href")
            icon = _SITE_IMAGE.fullmatch(_unquote(href.group(2))) if href and "icon" in rels else None
            if href and icon:
                return f'{tag[:href.start()]} {href.group(1)}="{images}{icon.group(1)}"{tag[href.end():]}'
            if "stylesheet" not in rels:
                return tag
            key = "href"
        else:
            key = "src"
        attr = attrs.get(key)
        if attr is None:
            return tag
        url = _unquote(attr.group(2))
        asset = CDN_ASSETS.get(url)
        if asset is None:
            if _is_remote(url) and unknown is not None:
                unknown.add(url)
            return tag
        new = f'{tag[:attr.start()]} {attr.group(1)}="{vendor_prefix}{asset.rel}"{tag[attr.end():]}'
        return _STRIP_ATTR.sub("", new)

    return rewrite_gx_images(_TAG.sub(replace, html), images)


def _vendor_files(assets_dir: Path) -> Iterable[PurePosixPath]:
    """Files of the pinned packages below ``assets_dir``, relative to it (markers excluded)."""
    for spec in packages():
        root = assets_dir / spec
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.name != MARKER and not path.name.endswith(".part"):
                yield PurePosixPath(path.relative_to(assets_dir).as_posix())


def copy_assets(assets_dir: Path, site_dir: Path) -> int:
    """Copy the assets into ``<site>/static/vendor`` where missing or different; return the count copied."""
    copied = 0
    vendor = site_dir / VENDOR_DIR
    for rel in _vendor_files(assets_dir):
        src, dest = assets_dir / rel, vendor / rel
        if dest.is_file() and filecmp.cmp(src, dest, shallow=False):
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        copied += 1
    return copied


def copy_gx_logo(site_dir: Path) -> bool:
    """Copy GX's logo from its package into ``<site>/static/images/`` when the site lacks it; whether it is there."""
    dest = site_dir / IMAGES_DIR / GX_LOGO
    if dest.is_file():
        return True
    spec = importlib.util.find_spec("great_expectations")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        src = Path(folder) / "render" / "view" / IMAGES_DIR / GX_LOGO
        if src.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
            return True
    return False


def localize(site_dir: Path | str, assets_dir: Path | str | None = None, changed_since: float | None = None) -> int:
    """Make a Data Docs site use the local assets; return the number of HTML files rewritten.

    Without fetched assets it logs one warning and changes nothing. Running it again changes nothing.
    With ``changed_since`` (a ``time.time()`` value) only pages written since then are looked at: the
    pages an audit run's gate just built, not the whole history of validation pages.
    """
    site = Path(str(site_dir).removeprefix("file://"))
    assets = Path(assets_dir) if assets_dir is not None else default_assets_dir()
    if not is_fetched(assets):
        log.warning(FETCH_HINT)
        return 0
    copied = copy_assets(assets, site)
    copy_gx_logo(site)
    vendor = site / VENDOR_DIR
    unknown: set[str] = set()
    rewritten = 0
    for page in sorted(site.rglob("*.html")):
        if vendor in page.parents or (changed_since is not None and page.stat().st_mtime < changed_since):
            continue
        prefix = Path(os.path.relpath(vendor, page.parent)).as_posix() + "/"
        text = page.read_text(encoding="utf-8")
        new = rewrite_html(text, prefix, unknown)
        if new != text:
            write_atomic(page, new.encode("utf-8"))
            rewritten += 1
    if unknown:
        log.warning("Data Docs: left unknown remote asset URLs as they are: %s", ", ".join(sorted(unknown)))
    log.info("Data Docs: %d page(s) pointed at local assets, %d asset file(s) copied, in %s", rewritten, copied, site)
    return rewritten


def main(argv: list[str] | None = None) -> int:
    """CLI: ``localize SITE_DIR [--assets D]``."""
    parser = argparse.ArgumentParser(
        prog="python -m kafka_zk_audit.gate.docs_assets", description=__doc__.splitlines()[0],
        epilog=f"The assets are fetched by `{FETCH_COMMAND}`.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    loc = sub.add_parser("localize", help="point a Data Docs site at the local assets")
    loc.add_argument("site_dir", type=Path)
    loc.add_argument("--assets", type=Path, default=None, help=f"assets folder (default {DEFAULT_ASSETS_DIR})")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    count = localize(args.site_dir, args.assets)
    print(f"{count} page(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
