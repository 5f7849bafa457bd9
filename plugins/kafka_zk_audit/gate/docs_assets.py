"""Make the Great Expectations Data Docs site work offline.

GX 1.24.1 renders Data Docs pages that load jQuery, Bootstrap, bootstrap-table, Vega, Font Awesome etc.
from public CDNs; without them the index page's tables (built by bootstrap-table) stay empty. GX cannot
be told to use other URLs (its own templates win over ``custom_views_directory``), so this module
post-processes the generated HTML instead:

* :func:`fetch` downloads the exact npm packages behind those CDN URLs from the npm registry, checks
  each tarball against ``docs_assets.lock.json`` (sha512 ``dist.integrity``) and keeps only the needed
  files under ``<dir>/<package>@<version>/`` (default ``plugins/kafka_zk_audit/gate/vendor/``).
* :func:`localize` copies them into ``<site>/static/vendor/`` and points every page's ``<script src>`` /
  stylesheet ``<link href>`` at them with paths relative to the page.

CLI: ``python -m kafka_zk_audit.gate.docs_assets fetch [--dir D] | localize SITE_DIR | --update-lock``.
"""

from __future__ import annotations

import argparse
import base64
import filecmp
import hashlib
import io
import json
import logging
import os
import posixpath
import re
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
LOCK_FILE = HERE / "docs_assets.lock.json"
DEFAULT_ASSETS_DIR = HERE / "vendor"
ASSETS_DIR_ENV = "KAFKA_ZK_AUDIT_DOCS_ASSETS"  # overrides DEFAULT_ASSETS_DIR
REGISTRY_ENV = "KAFKA_ZK_AUDIT_NPM_REGISTRY"  # e.g. an internal npm mirror at an air-gapped site
DEFAULT_REGISTRY = "https://registry.npmjs.org"
MARKER = ".complete"
VENDOR_DIR = PurePosixPath("static", "vendor")
TIMEOUT_S = 60
RETRIES = 3
FETCH_HINT = "Data Docs keep CDN links; run `python -m kafka_zk_audit.gate.docs_assets fetch` for offline docs"


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
# the bare package URL (--update-lock checks that).
VEGA = "5.33.1"
VEGA_LITE = "5.23.0"
VEGA_EMBED = "6.29.0"
FONTAWESOME = "6.6.0"
JQUERY = "3.7.1"
POPPER = "1.12.9"
BOOTSTRAP = "4.3.1"
BOOTSTRAP_TABLE = "1.19.1"
DATEPICKER = "1.9.0"
BOOTSTRAP_DARK = "1.1.0"

_BT_FILTER = "dist/extensions/filter-control/bootstrap-table-filter-control"

# Every CDN URL in GX 1.24.1's Data Docs templates (js_script_imports.j2, index_page.j2, page.j2,
# page_minimal.j2) that is a <script src> or a stylesheet <link href>.
CDN_ASSETS: dict[str, Asset] = {
    "https://cdn.jsdelivr.net/npm/vega@5": Asset("vega", VEGA, "build/vega.min.js"),
    "https://cdn.jsdelivr.net/npm/vega-lite@5": Asset("vega-lite", VEGA_LITE, "build/vega-lite.min.js"),
    "https://cdn.jsdelivr.net/npm/vega-embed@6": Asset("vega-embed", VEGA_EMBED, "build/vega-embed.min.js"),
    # all.min.css loads ../webfonts/*: the package layout is kept, see EXTRA_PREFIXES.
    f"https://cdnjs.cloudflare.com/ajax/libs/font-awesome/{FONTAWESOME}/css/all.min.css":
        Asset("@fortawesome/fontawesome-free", FONTAWESOME, "css/all.min.css"),
    f"https://code.jquery.com/jquery-{JQUERY}.min.js": Asset("jquery", JQUERY, "dist/jquery.min.js"),
    f"https://cdnjs.cloudflare.com/ajax/libs/popper.js/{POPPER}/umd/popper.min.js":
        Asset("popper.js", POPPER, "dist/umd/popper.min.js"),
    f"https://stackpath.bootstrapcdn.com/bootstrap/{BOOTSTRAP}/js/bootstrap.min.js":
        Asset("bootstrap", BOOTSTRAP, "dist/js/bootstrap.min.js"),
    f"https://maxcdn.bootstrapcdn.com/bootstrap/{BOOTSTRAP}/css/bootstrap.min.css":
        Asset("bootstrap", BOOTSTRAP, "dist/css/bootstrap.min.css"),
    f"https://unpkg.com/bootstrap-table@{BOOTSTRAP_TABLE}/dist/bootstrap-table.min.js":
        Asset("bootstrap-table", BOOTSTRAP_TABLE, "dist/bootstrap-table.min.js"),
    f"https://unpkg.com/bootstrap-table@{BOOTSTRAP_TABLE}/dist/bootstrap-table.min.css":
        Asset("bootstrap-table", BOOTSTRAP_TABLE, "dist/bootstrap-table.min.css"),
    f"https://unpkg.com/bootstrap-table@{BOOTSTRAP_TABLE}/{_BT_FILTER}.min.js":
        Asset("bootstrap-table", BOOTSTRAP_TABLE, f"{_BT_FILTER}.min.js"),
    # GX links the filter-control CSS of bootstrap-table 1.19.0 (and its JS of 1.19.1). Both are served
    # from the 1.19.1 tarball, which has the same two CSS files, so one tarball is enough.
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.css":
        Asset("bootstrap-table", BOOTSTRAP_TABLE, f"{_BT_FILTER}.css"),
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.min.css":
        Asset("bootstrap-table", BOOTSTRAP_TABLE, f"{_BT_FILTER}.min.css"),
    f"https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/{DATEPICKER}/js/bootstrap-datepicker.min.js":
        Asset("bootstrap-datepicker", DATEPICKER, "dist/js/bootstrap-datepicker.min.js"),
    f"https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/{DATEPICKER}/css/bootstrap-datepicker.min.css":
        Asset("bootstrap-datepicker", DATEPICKER, "dist/css/bootstrap-datepicker.min.css"),
    f"https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@{BOOTSTRAP_DARK}/dist/css/bootstrap-prefers-dark.css":
        Asset("@forevolve/bootstrap-dark", BOOTSTRAP_DARK, "dist/css/bootstrap-prefers-dark.css"),
}

# Whole folders needed besides the files above (paths inside the tarball, after its top folder).
EXTRA_PREFIXES: dict[str, tuple[str, ...]] = {"@fortawesome/fontawesome-free": ("webfonts/",)}
# Top-level licence files are kept too: the vendored files are redistributed with every site.
_LICENSE = re.compile(r"(?i)^(licen[cs]e|copying)(\.[a-z]+)?$")
# Bare-package CDN URLs: the pinned path must be what jsDelivr serves for them (package.json field).
_BARE_PACKAGE_URL = re.compile(r"^https://cdn\.jsdelivr\.net/npm/(@?[^@/]+(?:/[^@/]+)?)@[^/]+$")


class AssetFetchError(RuntimeError):
    """The assets could not be fetched or verified."""


def packages() -> dict[str, Asset]:
    """One representative :class:`Asset` per pinned ``name@version``, sorted by spec."""
    by_spec: dict[str, Asset] = {}
    for asset in CDN_ASSETS.values():
        by_spec.setdefault(asset.spec, asset)
    return dict(sorted(by_spec.items()))


def wanted(package: str, version: str, path: str) -> bool:
    """Whether a file of a tarball (path after its top folder) is kept."""
    if any(a.package == package and a.version == version and a.path == path for a in CDN_ASSETS.values()):
        return True
    if "/" not in path and _LICENSE.match(path):
        return True
    return any(path.startswith(prefix) for prefix in EXTRA_PREFIXES.get(package, ()))


def default_assets_dir() -> Path:
    """``$KAFKA_ZK_AUDIT_DOCS_ASSETS`` or ``plugins/kafka_zk_audit/gate/vendor``."""
    return Path(os.environ.get(ASSETS_DIR_ENV) or DEFAULT_ASSETS_DIR)


def registry() -> str:
    """The npm registry base URL, without a trailing slash."""
    return (os.environ.get(REGISTRY_ENV) or DEFAULT_REGISTRY).rstrip("/")


def load_lock(path: Path | None = None) -> dict[str, dict[str, str]]:
    """``{"name@version": {"tarball": url, "integrity": "sha512-..."}}``; checks it covers every package."""
    path = path or LOCK_FILE
    try:
        locked = json.loads(path.read_text())["packages"]
    except FileNotFoundError as exc:
        raise AssetFetchError(
            f"{path} is missing: run `python -m kafka_zk_audit.gate.docs_assets --update-lock`"
        ) from exc
    missing = sorted(set(packages()) - set(locked))
    if missing:
        raise AssetFetchError(f"{path} lacks {', '.join(missing)}: run `python -m kafka_zk_audit.gate.docs_assets "
                              "--update-lock`")
    return locked


def _marker_text() -> str:
    """What the marker holds: a digest of the lock and the file table, so a changed pin re-fetches."""
    digest = hashlib.sha256(LOCK_FILE.read_bytes())
    for url, asset in sorted(CDN_ASSETS.items()):
        digest.update(f"{url} {asset.rel}\n".encode())
    digest.update(json.dumps(EXTRA_PREFIXES, sort_keys=True).encode())
    return digest.hexdigest() + "\n"


def _read(path: Path) -> str | None:
    """A text file's content, or None when it cannot be read."""
    try:
        return path.read_text()
    except OSError:
        return None


def is_fetched(assets_dir: Path | None = None) -> bool:
    """Whether ``assets_dir`` holds a complete fetch for the current lock."""
    try:
        expected = _marker_text()
    except OSError:  # no lock file
        return False
    return _read((assets_dir or default_assets_dir()) / MARKER) == expected


def _http_get(url: str, *, accept: str | None = None) -> bytes:
    """GET with a timeout and retries; raises :class:`AssetFetchError` naming what to do."""
    request = urllib.request.Request(url, headers={"User-Agent": "kafka-zk-audit-docs-assets"})
    if accept:
        request.add_header("Accept", accept)
    last: Exception | None = None
    for attempt in range(1, RETRIES + 1):
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            last = exc
            if exc.code < 500 and exc.code != 429:
                break
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        if attempt < RETRIES:
            time.sleep(2 * attempt)
    raise AssetFetchError(
        f"cannot download {url}: {last}. The Data Docs assets come from the npm registry ({registry()}); "
        f"check the network or proxy (HTTPS_PROXY), or point {REGISTRY_ENV} at an npm mirror, then run "
        "`python -m kafka_zk_audit.gate.docs_assets fetch` again (or copy a fetched docs_assets/ folder here "
        f"and set {ASSETS_DIR_ENV})."
    )


def _tarball_url(locked_url: str) -> str:
    """The lock's tarball URL, moved to the configured registry if it is not the public one."""
    base = registry()
    if base != DEFAULT_REGISTRY and locked_url.startswith(DEFAULT_REGISTRY + "/"):
        return base + locked_url[len(DEFAULT_REGISTRY):]
    return locked_url


def verify_integrity(data: bytes, integrity: str, what: str) -> None:
    """Check ``data`` against an SRI string ``sha512-<base64>`` (the npm ``dist.integrity``)."""
    algo, _, expected = integrity.partition("-")
    if algo != "sha512":
        raise AssetFetchError(f"{what}: unsupported integrity {integrity!r} in the lock (want sha512)")
    actual = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if actual != expected:
        raise AssetFetchError(f"{what}: integrity mismatch (lock sha512-{expected}, downloaded sha512-{actual})")


def _write_atomic(dest: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so a present file is always complete."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, dest)


def extract(tarball: bytes, asset: Asset, dest: Path) -> list[str]:
    """Extract the wanted regular files of one package tarball into ``dest``; return their paths."""
    found: list[str] = []
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        for member in archive.getmembers():
            # npm tarballs have one top folder, usually "package/"; strip whatever it is.
            parts = PurePosixPath(member.name).parts[1:]
            path = "/".join(parts)
            if not member.isfile() or not path or ".." in parts or not wanted(asset.package, asset.version, path):
                continue
            stream = archive.extractfile(member)
            if stream is None:
                continue
            _write_atomic(dest / path, stream.read())
            found.append(path)
    needed = {a.path for a in CDN_ASSETS.values() if a.spec == asset.spec}
    missing = sorted(needed - set(found))
    if missing:
        raise AssetFetchError(f"{asset.spec}: tarball lacks {', '.join(missing)}")
    return found


def fetch(target_dir: Path | str | None = None, *, echo: Callable[[str], None] = print) -> Path:
    """Download, verify and extract the pinned assets into ``target_dir``; skip when already complete."""
    target = Path(target_dir) if target_dir is not None else default_assets_dir()
    if is_fetched(target):
        echo(f"docs assets: up to date in {target}")
        return target
    locked = load_lock()
    target.mkdir(parents=True, exist_ok=True)
    (target / MARKER).unlink(missing_ok=True)
    started, total = time.monotonic(), 0
    for spec, asset in packages().items():
        dest = target / spec
        needed = [dest / a.path for a in CDN_ASSETS.values() if a.spec == spec]
        entry = locked[spec]
        if all(p.is_file() for p in needed) and _read(dest / MARKER) == entry["integrity"] + "\n":
            echo(f"docs assets: {spec} already present")
            continue
        url = _tarball_url(entry["tarball"])
        echo(f"docs assets: fetching {spec} from {url}")
        data = _http_get(url)
        verify_integrity(data, entry["integrity"], spec)
        if dest.exists():
            shutil.rmtree(dest)
        files = extract(data, asset, dest)
        (dest / MARKER).write_text(entry["integrity"] + "\n")
        total += len(data)
        echo(f"docs assets: {spec}: {len(data) / 1e6:.1f} MB verified, {len(files)} files kept")
    _write_atomic(target / MARKER, _marker_text().encode())
    echo(f"docs assets: {total / 1e6:.1f} MB downloaded in {time.monotonic() - started:.1f}s into {target}")
    return target


def update_lock(lock_path: Path | None = None, *, echo: Callable[[str], None] = print) -> None:
    """Write the lock from the registry's metadata of each pinned ``name@version``."""
    lock_path = lock_path or LOCK_FILE
    entries: dict[str, dict[str, str]] = {}
    bare = {asset.spec: asset.path for url, asset in CDN_ASSETS.items() if _BARE_PACKAGE_URL.match(url)}
    for spec, asset in packages().items():
        url = f"{registry()}/{urllib.parse.quote(asset.package, safe='@')}/{asset.version}"
        meta = json.loads(_http_get(url, accept="application/json"))
        dist = meta["dist"]
        if not str(dist.get("integrity", "")).startswith("sha512-"):
            raise AssetFetchError(f"{spec}: the registry gives no sha512 integrity")
        if spec in bare:
            served = meta.get("jsdelivr") or meta.get("unpkg") or meta.get("main")
            if served is None or posixpath.normpath(served) != bare[spec]:
                raise AssetFetchError(f"{spec}: jsDelivr serves {served!r} for the bare package, pinned {bare[spec]!r}")
        entries[spec] = {"tarball": dist["tarball"], "integrity": dist["integrity"]}
        echo(f"lock: {spec} {dist['integrity'][:24]}...")
    text = json.dumps({"lockfileVersion": 1, "packages": entries}, indent=2, sort_keys=True) + "\n"
    lock_path.write_text(text)
    echo(f"lock: wrote {lock_path}")


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


def rewrite_html(html: str, vendor_prefix: str, unknown: set[str] | None = None) -> str:
    """Point known CDN ``<script src>``/stylesheet ``<link href>`` URLs at ``vendor_prefix`` (a relative URL
    ending in ``/``) and drop those tags' ``integrity``/``crossorigin``; collect other remote ones in ``unknown``.
    """

    def replace(match: re.Match[str]) -> str:
        tag, name = match.group(0), match.group(1).lower()
        attrs = _attrs(tag)
        if name == "link":
            rel = attrs.get("rel")
            if rel is None or "stylesheet" not in _unquote(rel.group(2)).lower().split():
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

    return _TAG.sub(replace, html)


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
            _write_atomic(page, new.encode("utf-8"))
            rewritten += 1
    if unknown:
        log.warning("Data Docs: left unknown remote asset URLs as they are: %s", ", ".join(sorted(unknown)))
    log.info("Data Docs: %d page(s) pointed at local assets, %d asset file(s) copied, in %s", rewritten, copied, site)
    return rewritten


def main(argv: list[str] | None = None) -> int:
    """CLI: ``fetch [--dir D]``, ``localize SITE_DIR [--assets D]``, ``--update-lock``."""
    parser = argparse.ArgumentParser(
        prog="python -m kafka_zk_audit.gate.docs_assets", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--update-lock", action="store_true", help="rewrite the lock file from the npm registry")
    sub = parser.add_subparsers(dest="command")
    fetch_cmd = sub.add_parser("fetch", help="download and verify the pinned assets")
    fetch_cmd.add_argument("--dir", type=Path, default=None, help=f"target folder (default {DEFAULT_ASSETS_DIR})")
    loc = sub.add_parser("localize", help="point a Data Docs site at the local assets")
    loc.add_argument("site_dir", type=Path)
    loc.add_argument("--assets", type=Path, default=None, help="assets folder (default: the fetch default)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    try:
        if args.update_lock:
            update_lock()
        if args.command == "fetch":
            fetch(args.dir)
        elif args.command == "localize":
            count = localize(args.site_dir, args.assets)
            print(f"{count} page(s) rewritten")
        elif not args.update_lock:
            parser.print_help()
            return 2
    except AssetFetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
