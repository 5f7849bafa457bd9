"""Fetch the Data Docs assets at set-up: the pinned npm packages the gate points its pages at, for offline docs.

    .venv/bin/python scripts/fetch_docs_assets.py fetch [--dir D]    (``scripts/setup.sh`` runs it)
    .venv/bin/python scripts/fetch_docs_assets.py --update-lock      (after changing a pin)

``fetch`` downloads the exact npm packages behind the CDN URLs of GX's Data Docs (the pins of
``kafka_zk_audit.gate.docs_assets``, ``CDN_ASSETS``) from the npm registry, checks each tarball against
``plugins/kafka_zk_audit/gate/docs_assets.lock.json`` (sha512 ``dist.integrity``) and keeps only the needed files
under ``<dir>/<package>@<version>/`` (default ``plugins/kafka_zk_audit/gate/vendor/``, or
``$KAFKA_ZK_AUDIT_DOCS_ASSETS``); a complete fetch is skipped. ``--update-lock`` rewrites the lock from the
registry's metadata. ``$KAFKA_ZK_AUDIT_NPM_REGISTRY`` points both at an npm mirror. The gate's run-time rewriting
of the pages is ``kafka_zk_audit.gate.docs_assets.localize``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
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
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from kafka_zk_audit.gate import docs_assets
from kafka_zk_audit.gate.docs_assets import ASSETS_DIR_ENV, DEFAULT_ASSETS_DIR, FETCH_COMMAND, MARKER, Asset

REGISTRY_ENV = "KAFKA_ZK_AUDIT_NPM_REGISTRY"  # e.g. an internal npm mirror at an air-gapped site
DEFAULT_REGISTRY = "https://registry.npmjs.org"
TIMEOUT_S = 60
RETRIES = 3
UPDATE_LOCK_COMMAND = "python scripts/fetch_docs_assets.py --update-lock"

# Top-level licence files are kept too: the vendored files are redistributed with every site.
_LICENSE = re.compile(r"(?i)^(licen[cs]e|copying)(\.[a-z]+)?$")
# Bare-package CDN URLs: the pinned path must be what jsDelivr serves for them (package.json field).
_BARE_PACKAGE_URL = re.compile(r"^https://cdn\.jsdelivr\.net/npm/(@?[^@/]+(?:/[^@/]+)?)@[^/]+$")


class AssetFetchError(RuntimeError):
    """The assets could not be fetched or verified."""


def wanted(package: str, version: str, path: str) -> bool:
    """Whether a file of a tarball (path after its top folder) is kept."""
    if any(a.package == package and a.version == version and a.path == path for a in docs_assets.CDN_ASSETS.values()):
        return True
    if "/" not in path and _LICENSE.match(path):
        return True
    return any(path.startswith(prefix) for prefix in docs_assets.EXTRA_PREFIXES.get(package, ()))


def registry() -> str:
    """The npm registry base URL, without a trailing slash."""
    return (os.environ.get(REGISTRY_ENV) or DEFAULT_REGISTRY).rstrip("/")


def load_lock(path: Path | None = None) -> dict[str, dict[str, str]]:
    """``{"name@version": {"tarball": url, "integrity": "sha512-..."}}``; checks it covers every package."""
    path = path or docs_assets.LOCK_FILE
    try:
        locked = json.loads(path.read_text())["packages"]
    except FileNotFoundError as exc:
        raise AssetFetchError(f"{path} is missing: run `{UPDATE_LOCK_COMMAND}`") from exc
    missing = sorted(set(docs_assets.packages()) - set(locked))
    if missing:
        raise AssetFetchError(f"{path} lacks {', '.join(missing)}: run `{UPDATE_LOCK_COMMAND}`")
    return locked


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
        f"`{FETCH_COMMAND}` again (or copy a fetched docs_assets/ folder here and set {ASSETS_DIR_ENV})."
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


def _needed(spec: str) -> list[str]:
    """The paths in ``spec``'s tarball that CDN URLs name."""
    return [a.path for a in docs_assets.CDN_ASSETS.values() if a.spec == spec]


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
            docs_assets.write_atomic(dest / path, stream.read())
            found.append(path)
    missing = sorted(set(_needed(asset.spec)) - set(found))
    if missing:
        raise AssetFetchError(f"{asset.spec}: tarball lacks {', '.join(missing)}")
    return found


def fetch(target_dir: Path | str | None = None, *, echo: Callable[[str], None] = print) -> Path:
    """Download, verify and extract the pinned assets into ``target_dir``; skip when already complete."""
    target = Path(target_dir) if target_dir is not None else docs_assets.default_assets_dir()
    if docs_assets.is_fetched(target):
        echo(f"docs assets: up to date in {target}")
        return target
    locked = load_lock()
    target.mkdir(parents=True, exist_ok=True)
    (target / MARKER).unlink(missing_ok=True)
    started, total = time.monotonic(), 0
    for spec, asset in docs_assets.packages().items():
        dest = target / spec
        entry = locked[spec]
        if all((dest / path).is_file() for path in _needed(spec)) and docs_assets.has_marker(
                dest, entry["integrity"] + "\n"):
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
    docs_assets.write_atomic(target / MARKER, docs_assets.marker_text().encode())
    echo(f"docs assets: {total / 1e6:.1f} MB downloaded in {time.monotonic() - started:.1f}s into {target}")
    return target


def update_lock(lock_path: Path | None = None, *, echo: Callable[[str], None] = print) -> None:
    """Write the lock from the registry's metadata of each pinned ``name@version``."""
    lock_path = lock_path or docs_assets.LOCK_FILE
    entries: dict[str, dict[str, str]] = {}
    bare = {asset.spec: asset.path for url, asset in docs_assets.CDN_ASSETS.items() if _BARE_PACKAGE_URL.match(url)}
    for spec, asset in docs_assets.packages().items():
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


def main(argv: list[str] | None = None) -> int:
    """CLI: ``fetch [--dir D]``, ``--update-lock``."""
    parser = argparse.ArgumentParser(prog="python scripts/fetch_docs_assets.py", description=__doc__.splitlines()[0])
    parser.add_argument("--update-lock", action="store_true", help="rewrite the lock file from the npm registry")
    sub = parser.add_subparsers(dest="command")
    fetch_cmd = sub.add_parser("fetch", help="download and verify the pinned assets")
    fetch_cmd.add_argument("--dir", type=Path, default=None, help=f"target folder (default {DEFAULT_ASSETS_DIR})")
    args = parser.parse_args(argv)
    if not args.update_lock and args.command is None:
        parser.print_help()
        return 2
    try:
        if args.update_lock:
            update_lock()
        if args.command == "fetch":
            fetch(args.dir)
    except AssetFetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
