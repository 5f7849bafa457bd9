"""Offline Data Docs: the pinned CDN assets, their fetch (``scripts/fetch_docs_assets.py``, a set-up tool), and the
rewriting of a site's pages to them (``kafka_zk_audit.gate.docs_assets``, at run time).

The unit tests use small HTML files and fake tarballs (no network). The real tests build a Data Docs site
with GX itself (pandas, not Spark) and open it in headless Chromium with every host name unresolvable.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import json
import logging
import os
import re
import shutil
import tarfile
import urllib.error
from pathlib import Path

import pytest

from kafka_zk_audit.gate import docs_assets
from kafka_zk_audit.gate.docs_assets import CDN_ASSETS, Asset, localize, rewrite_html
from kafka_zk_audit_testing.browser import render_dom, text_of

FETCHER = Path(__file__).resolve().parents[2] / "scripts" / "fetch_docs_assets.py"
_spec = importlib.util.spec_from_file_location("fetch_docs_assets", FETCHER)
assert _spec and _spec.loader
fetcher = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fetcher)
AssetFetchError = fetcher.AssetFetchError

JQUERY_URL = "https://code.jquery.com/jquery-3.7.1.min.js"
POPPER_URL = "https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js"
FA_URL = "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css"
UNKNOWN_URL = "https://cdn.example.org/other.js"
PAGES = ("index.html", "expectations/partitions.html", "validations/partitions/__none__/20261122T070430Z/b.html")


def page_html() -> str:
    """A page with every known CDN asset, the way GX writes them, plus tags that must stay as they are."""
    tags = []
    for url in CDN_ASSETS:
        if url.endswith(".css"):
            tags.append(f'<link rel="stylesheet" type="text/css" href="{url}">')
        else:
            tags.append(f'<script src="{url}" integrity="sha384-abc" crossorigin="anonymous"></script>')
    tags += [
        f'<script src="{UNKNOWN_URL}" integrity="sha384-keep" crossorigin="anonymous"></script>',
        f'<link rel="preload" href="{JQUERY_URL}">',
        '<link rel="shortcut icon" href="../static/images/favicon.ico" type="image/x-icon"/>',
        "<script>var x = '<b>';</script>",
    ]
    body = f'<a href="{JQUERY_URL}">jquery</a><img src="https://great-expectations-web-assets.s3.amazonaws.com/x.png">'
    return "<html><head>\n" + "\n".join(tags) + f"\n</head><body>{body}</body></html>\n"


@pytest.fixture
def fake_assets(tmp_path: Path) -> Path:
    """An assets dir as ``fetch`` leaves it, with placeholder files."""
    root = tmp_path / "assets"
    for asset in CDN_ASSETS.values():
        path = root / asset.rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"/* {asset.rel} */\n")
    font = root / "@fortawesome/fontawesome-free@6.6.0/webfonts/fa-solid-900.woff2"
    font.parent.mkdir(parents=True)
    font.write_bytes(b"font")
    (root / docs_assets.MARKER).write_text(docs_assets.marker_text())
    return root


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site with pages at the three depths GX writes them."""
    root = tmp_path / "site"
    for page in PAGES:
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        (root / page).write_text(page_html())
    return root


def srcs(html: str) -> list[str]:
    """The src of every <script> and the href of every stylesheet <link>."""
    found = re.findall(r'<script[^>]*\ssrc="([^"]*)"', html)
    found += re.findall(r'<link[^>]*rel="stylesheet"[^>]*href="([^"]*)"', html)
    return found


def test_localize_points_every_page_at_local_files(site: Path, fake_assets: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kafka_zk_audit.gate.docs_assets"):
        assert localize(site, fake_assets) == len(PAGES)
    vendor = site / "static" / "vendor"
    assert (vendor / "@fortawesome/fontawesome-free@6.6.0/webfonts/fa-solid-900.woff2").read_bytes() == b"font"
    for page in PAGES:
        path = site / page
        html = path.read_text()
        local = [src for src in srcs(html) if src != UNKNOWN_URL]
        assert len(local) == len(CDN_ASSETS), page
        for src in local:
            assert not src.startswith(("/", "http")), src
            target = (path.parent / src).resolve()
            assert target.is_file(), (page, src)
            assert vendor.resolve() in target.parents
        depth = page.count("/")
        assert f'src="{"../" * depth}static/vendor/jquery@3.7.1/dist/jquery.min.js"' in html
        assert f'href="{"../" * depth}static/vendor/@fortawesome/fontawesome-free@6.6.0/css/all.min.css"' in html
        # rewritten tags lose integrity/crossorigin, the unknown one keeps them; other tags are untouched
        assert html.count("integrity=") == 1 and html.count("crossorigin=") == 1
        assert f'<script src="{UNKNOWN_URL}" integrity="sha384-keep" crossorigin="anonymous"></script>' in html
        assert f'<link rel="preload" href="{JQUERY_URL}">' in html
        assert f'<a href="{JQUERY_URL}">' in html
        assert "great-expectations-web-assets" in html
        assert "<script>var x = '<b>';</script>" in html
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and UNKNOWN_URL in warnings[0]


def test_localize_is_idempotent(site: Path, fake_assets: Path) -> None:
    assert localize(site, fake_assets) == len(PAGES)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in site.rglob("*") if p.is_file()}
    assert localize(site, fake_assets) == 0
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in site.rglob("*") if p.is_file()}
    assert after == before


def test_localize_recopies_a_changed_asset(site: Path, fake_assets: Path) -> None:
    localize(site, fake_assets)
    copied = site / "static/vendor/jquery@3.7.1/dist/jquery.min.js"
    copied.write_text("stale")
    assert localize(site, fake_assets) == 0
    assert copied.read_text() == (fake_assets / "jquery@3.7.1/dist/jquery.min.js").read_text()


def test_localize_without_assets_warns_and_changes_nothing(site: Path, tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    before = {p: p.read_bytes() for p in site.rglob("*") if p.is_file()}
    with caplog.at_level(logging.WARNING, logger="kafka_zk_audit.gate.docs_assets"):
        assert localize(site, tmp_path / "nothing-fetched") == 0
    assert {p: p.read_bytes() for p in site.rglob("*") if p.is_file()} == before
    assert [r.getMessage() for r in caplog.records] == [docs_assets.FETCH_HINT]


def test_rewrite_html_handles_attribute_order_and_quotes() -> None:
    html = (f"<script crossorigin integrity='sha384-x' src='{POPPER_URL}'></script>\n"
            f'<LINK HREF="{FA_URL}" REL="stylesheet">')
    out = rewrite_html(html, "../static/vendor/")
    assert out == ('<script src="../static/vendor/popper.js@1.12.9/dist/umd/popper.min.js"></script>\n'
                   '<LINK HREF="../static/vendor/@fortawesome/fontawesome-free@6.6.0/css/all.min.css"'
                   ' REL="stylesheet">')
    assert rewrite_html(out, "../static/vendor/") == out


GX_BUCKET = "https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/"
GX_LOGO_TAG = (f'<img\n  class="NO-CACHE"\n  src="{GX_BUCKET}logo-long.png?d=20261128T174944.039064Z'
               '&dataContextId=cd1245ee-1fba-4b76-a726-5dd91d75af70"\n  alt="Great Expectations"/>')
GX_DARK_LOGO = f".navbar-brand a {{\n background: url('{GX_BUCKET}full_logo_dark.png') 0 0 no-repeat;\n}}"


def test_gx_logo_and_favicon_point_at_the_sites_images() -> None:
    html = (f'<link rel="shortcut icon" href="../../../static/images/favicon.ico" type="image/x-icon"/>'
            f"<style>{GX_DARK_LOGO}</style>{GX_LOGO_TAG}")
    out = rewrite_html(html, "../../../../static/vendor/")  # a validation page, four folders down
    assert '<link rel="shortcut icon" href="../../../../static/images/favicon.ico" type="image/x-icon"/>' in out
    assert 'src="../../../../static/images/logo-long.png"\n  alt="Great Expectations"/>' in out
    assert "great-expectations-web-assets" not in out and "dataContextId" not in out
    assert ".navbar-brand a {\n background: none 0 0 no-repeat;\n}" in out
    assert rewrite_html(out, "../../../../static/vendor/") == out
    top = rewrite_html(html, "static/vendor/")  # the index
    assert 'href="static/images/favicon.ico"' in top and 'src="static/images/logo-long.png"' in top


def test_localize_copies_gx_logo_when_the_site_lacks_it(site: Path, fake_assets: Path) -> None:
    localize(site, fake_assets)
    import great_expectations

    packaged = Path(great_expectations.__file__).parent / "render/view/static/images/logo-long.png"
    assert (site / "static/images/logo-long.png").read_bytes() == packaged.read_bytes()


def test_table_covers_every_asset_url_in_the_gx_templates() -> None:
    import great_expectations

    templates = Path(great_expectations.__file__).parent / "render/view/templates"
    urls: set[str] = set()
    for template in templates.glob("*.j2"):
        urls |= set(srcs(template.read_text()))
        urls |= set(re.findall(r'<link[^>]*href="(https://[^"]*)"[^>]*rel="stylesheet"', template.read_text()))
    remote = {u for u in urls if u.startswith("https://")}
    assert remote and remote <= set(CDN_ASSETS), sorted(remote - set(CDN_ASSETS))
    lock = json.loads(docs_assets.LOCK_FILE.read_text())["packages"]
    assert set(lock) == set(docs_assets.packages())
    assert all(entry["integrity"].startswith("sha512-") for entry in lock.values())


# --- fetch, with fake tarballs ----------------------------------------------------------------------


def tarball(files: dict[str, bytes]) -> bytes:
    """A gzipped npm-style tarball of ``files`` (paths include the top folder)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def sri(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


@pytest.fixture
def fake_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Two tiny packages behind a fake registry; returns download counts by URL."""
    table = {
        "https://cdn.test/a.js": Asset("pkg-a", "1.0.0", "dist/a.min.js"),
        "https://cdn.test/font.css": Asset("@scope/font", "2.0.0", "css/all.css"),
    }
    tarballs = {
        "https://registry.test/pkg-a-1.0.0.tgz": tarball({
            "package/dist/a.min.js": b"a()", "package/dist/a.js": b"unwanted", "package/LICENSE": b"MIT",
            "package/../../evil.js": b"no",
        }),
        "https://registry.test/font-2.0.0.tgz": tarball({
            "font/css/all.css": b"@font-face{src:url(../webfonts/f.woff2)}", "font/webfonts/f.woff2": b"woff",
        }),
    }
    lock = {"pkg-a@1.0.0": "https://registry.test/pkg-a-1.0.0.tgz", "@scope/font@2.0.0": "https://registry.test/font-2.0.0.tgz"}
    lock_file = tmp_path / "lock.json"
    lock_file.write_text(json.dumps({"packages": {
        spec: {"tarball": url, "integrity": sri(tarballs[url])} for spec, url in lock.items()
    }}))
    downloads: dict[str, int] = {}

    def fake_get(url: str, *, accept: str | None = None) -> bytes:
        downloads[url] = downloads.get(url, 0) + 1
        return tarballs[url]

    monkeypatch.setattr(docs_assets, "CDN_ASSETS", table)
    monkeypatch.setattr(docs_assets, "EXTRA_PREFIXES", {"@scope/font": ("webfonts/",)})
    monkeypatch.setattr(docs_assets, "LOCK_FILE", lock_file)
    monkeypatch.setattr(fetcher, "_http_get", fake_get)
    return downloads


def test_fetch_verifies_extracts_and_is_idempotent(tmp_path: Path, fake_registry: dict[str, int]) -> None:
    target = tmp_path / "assets"
    fetcher.fetch(target, echo=lambda _: None)
    files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert files == [".complete", "@scope/font@2.0.0/.complete", "@scope/font@2.0.0/css/all.css",
                     "@scope/font@2.0.0/webfonts/f.woff2", "pkg-a@1.0.0/.complete", "pkg-a@1.0.0/LICENSE",
                     "pkg-a@1.0.0/dist/a.min.js"]
    assert not (tmp_path / "evil.js").exists()
    assert docs_assets.is_fetched(target)
    fetcher.fetch(target, echo=lambda _: None)
    assert set(fake_registry.values()) == {1}
    # a partial fetch (no top marker, one file lost) is redone for the damaged package only
    (target / docs_assets.MARKER).unlink()
    (target / "pkg-a@1.0.0/dist/a.min.js").unlink()
    assert not docs_assets.is_fetched(target)
    fetcher.fetch(target, echo=lambda _: None)
    assert fake_registry == {"https://registry.test/pkg-a-1.0.0.tgz": 2, "https://registry.test/font-2.0.0.tgz": 1}
    assert docs_assets.is_fetched(target)
    # and a site gets the font next to its css, as ../webfonts/ expects
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text('<link rel="stylesheet" href="https://cdn.test/font.css">')
    assert localize(site, target) == 1
    assert (site / "static/vendor/@scope/font@2.0.0/webfonts/f.woff2").read_bytes() == b"woff"


def test_fetch_rejects_a_tampered_tarball(tmp_path: Path, fake_registry: dict[str, int],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetcher, "_http_get", lambda url, accept=None: tarball({"package/dist/a.min.js": b"evil"}))
    with pytest.raises(AssetFetchError, match="integrity mismatch"):
        fetcher.fetch(tmp_path / "assets", echo=lambda _: None)
    assert not docs_assets.is_fetched(tmp_path / "assets")


def test_unreachable_registry_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def refuse(request: object, timeout: float) -> None:
        calls.append(timeout)
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(fetcher.urllib.request, "urlopen", refuse)
    monkeypatch.setattr(fetcher.time, "sleep", lambda _: None)
    with pytest.raises(AssetFetchError, match=r"scripts/fetch_docs_assets\.py fetch") as info:
        fetcher._http_get("https://registry.npmjs.org/jquery/-/jquery-3.7.1.tgz")
    assert len(calls) == fetcher.RETRIES and all(calls)
    assert "npm registry" in str(info.value)


def test_the_gates_hint_names_the_set_up_fetcher(capsys: pytest.CaptureFixture[str]) -> None:
    assert "`python scripts/fetch_docs_assets.py fetch`" in docs_assets.FETCH_HINT
    assert "scripts/fetch_docs_assets.py fetch" in (FETCHER.parents[1] / "scripts" / "setup.sh").read_text()
    assert fetcher.main([]) == 2
    assert "fetch" in capsys.readouterr().out


# --- real: a GX site in headless Chromium -----------------------------------------------------------

SUITE = "partitions_offline_docs"


@pytest.fixture(scope="module")
def real_assets() -> Path:
    """The real pinned assets, fetched from the npm registry when not there yet."""
    return fetcher.fetch(echo=lambda _: None)


@pytest.fixture(scope="module")
def gx_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Data Docs site built by GX: one suite, its expectation fails on one ``leader_not_in_isr`` row."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    import great_expectations.expectations as gxe
    import pandas as pd
    from great_expectations.checkpoint import UpdateDataDocsAction

    root = tmp_path_factory.mktemp("gx")
    docs = root / "data_docs"
    context = gx.get_context(mode="file", project_root_dir=str(root))
    for name in list(context.get_site_names()):
        context.delete_data_docs_site(name)
    context.add_data_docs_site("docs", {
        "class_name": "SiteBuilder",
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs)},
    })
    batch = context.data_sources.add_pandas("frames").add_dataframe_asset("partitions") \
        .add_batch_definition_whole_dataframe("all")
    suite = context.suites.add(gx.ExpectationSuite(name=SUITE))
    suite.add_expectation(gxe.ExpectColumnValuesToBeInSet(column="leader_not_in_isr", value_set=[False]))
    definition = context.validation_definitions.add(gx.ValidationDefinition(name="partitions", data=batch, suite=suite))
    checkpoint = context.checkpoints.add(gx.Checkpoint(
        name="offline_docs", validation_definitions=[definition],
        actions=[UpdateDataDocsAction(name="docs", site_names=["docs"])],
    ))
    frame = pd.DataFrame({"topic": ["a", "a", "b"], "partition": [0, 1, 0], "leader_not_in_isr": [False, True, False]})
    assert not checkpoint.run(batch_parameters={"dataframe": frame}).success
    assert (docs / "index.html").is_file()
    return docs


def test_gx_site_works_offline_after_localize(gx_site: Path, real_assets: Path, chromium_ok: str,
                                              tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(gx_site, site)
    validation = next((site / "validations").rglob("*.html"))

    # the control: as GX writes it, the index's tables stay empty without the CDNs
    before = render_dom(site / "index.html")
    assert SUITE not in text_of(before)
    assert 'class="bootstrap-table' not in before

    assert localize(site, real_assets) == 3
    assert localize(site, real_assets) == 0
    for page in site.rglob("*.html"):
        if "static" not in page.relative_to(site).parts:
            assert not [s for s in srcs(page.read_text()) if s.startswith("https://")], page

    index = render_dom(site / "index.html")
    assert 'class="bootstrap-table' in index  # bootstrap-table's JS ran
    text = text_of(index)
    assert SUITE in text and "Showing 1 to 1 of 1 rows" in text

    page = render_dom(validation)
    assert 'class="bootstrap-table' in page
    text = text_of(page)
    assert "Status: Failed" in text
    assert "leader_not_in_isr" in text and "values must belong to this set: False" in text
    assert "1 unexpected values found" in text
