"""The templates' compiled code kept in the cache folder (analyzer/cache.py, `cached_environment`):
a page is rendered from it the next time, the same as compiled afresh; an environment with other
options never takes another's code; a damaged or missing cache costs a compile, never a run."""

from __future__ import annotations

import jinja2
import pytest
from jinja2 import DictLoader, Environment
from jinja2.sandbox import SandboxedEnvironment

from analyzer import cache as cache_mod
from analyzer.analyze import AnalyzeOptions, analyze
from analyzer.cache import cached_environment
from analyzer.render import html as html_mod
from analyzer.render import summary as summary_mod
from analyzer.rules import templates as rule_templates
from conftest import SAMPLES


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """An empty cache folder, and environments made afresh (each is made once per process)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for made in (html_mod._environment, summary_mod._environment, rule_templates._environment):
        made.cache_clear()
    rule_templates.template.cache_clear()
    yield tmp_path / "hami-bundle-analyzer" / "templates"
    for made in (html_mod._environment, summary_mod._environment, rule_templates._environment):
        made.cache_clear()
    rule_templates.template.cache_clear()


def _no_compile(monkeypatch) -> None:
    def compile_(*_args, **_kwargs):
        raise AssertionError("a template was compiled again instead of read from the cache")

    monkeypatch.setattr(jinja2.Environment, "compile", compile_)


def test_a_report_page_is_rendered_from_its_kept_code(ruleset, kept, monkeypatch):
    report = analyze(
        [str(SAMPLES / "annotation-health-omitted" / "bundle")], AnalyzeOptions(ruleset=ruleset)
    ).report
    first = html_mod.render_html(report)
    assert any(kept.glob("__jinja2_*.cache")), "no compiled template was kept"
    html_mod._environment.cache_clear()
    _no_compile(monkeypatch)
    assert html_mod.render_html(report) == first


def test_a_rule_text_is_rendered_from_its_kept_code(kept, monkeypatch):
    text = "{{ node }} lost {{ n }} GPU(s)"
    assert rule_templates.render(text, node="gpu-1", n=2) == "gpu-1 lost 2 GPU(s)"
    rule_templates._environment.cache_clear()
    rule_templates.template.cache_clear()
    _no_compile(monkeypatch)
    assert rule_templates.render(text, node="gpu-1", n=2) == "gpu-1 lost 2 GPU(s)"


@pytest.mark.parametrize("cls", [Environment, SandboxedEnvironment])
def test_environments_with_other_options_never_take_each_others_code(kept, cls):
    """jinja2 keys a template's code by its name and text: the same template compiled with
    autoescaping must not be read back by an environment without it, nor the other way."""
    loader = DictLoader({"t.html": "<p>{{ x }}</p>"})
    escaping = cached_environment(cls, loader, autoescape=True)
    plain = cached_environment(cls, loader, autoescape=False)
    for _ in range(2):  # the second round reads both back
        assert escaping.get_template("t.html").render(x="<b>") == "<p>&lt;b&gt;</p>"
        assert plain.get_template("t.html").render(x="<b>") == "<p><b></p>"
        escaping.cache.clear()  # jinja2's own in-memory cache of loaded templates
        plain.cache.clear()
    assert len(list(kept.glob("__jinja2_*.cache"))) == 2


def test_a_damaged_kept_template_is_compiled_again(kept):
    loader = DictLoader({"t.txt": "{{ x }}!"})
    assert cached_environment(Environment, loader).get_template("t.txt").render(x=1) == "1!"
    (kept_file,) = kept.glob("__jinja2_*.cache")
    kept_file.write_bytes(b"j2\x00 not bytecode")
    assert cached_environment(Environment, loader).get_template("t.txt").render(x=2) == "2!"
    kept_file.write_bytes(b"")  # cut short
    assert cached_environment(Environment, loader).get_template("t.txt").render(x=3) == "3!"


def test_without_a_cache_folder_templates_are_compiled_each_time(monkeypatch):
    monkeypatch.setattr(cache_mod, "cache_dir", lambda *_parts: None)
    env = cached_environment(Environment, DictLoader({"t.txt": "{{ x }}?"}))
    assert env.bytecode_cache is None
    assert env.get_template("t.txt").render(x="y") == "y?"


def _kept_file(kept):
    (found,) = kept.glob("__jinja2_*.cache")
    return found


@pytest.mark.parametrize("cut", ["checksum", "code"])
def test_a_kept_template_damaged_past_its_header_is_compiled_again(kept, cut):
    """jinja2 checks a file's first bytes itself; what follows them (the source's checksum,
    pickled, then the code, marshalled) fails in other ways when damaged."""
    import pickle

    from jinja2.bccache import bc_magic

    loader = DictLoader({"t.txt": "{{ x }}!"})
    assert cached_environment(Environment, loader).get_template("t.txt").render(x=1) == "1!"
    path = _kept_file(kept)
    data = path.read_bytes()
    assert data.startswith(bc_magic)
    checksum_end = len(bc_magic) + len(pickle.dumps(pickle.loads(data[len(bc_magic) :]), 2))
    keep = len(bc_magic) if cut == "checksum" else checksum_end
    path.write_bytes(data[:keep] + b"\xff not what jinja2 wrote")
    assert cached_environment(Environment, loader).get_template("t.txt").render(x=2) == "2!"


def test_a_filter_handed_the_context_since_never_runs_code_compiled_without(kept):
    """How a filter is called is compiled into the template's code: an upgrade that hands a
    filter the context (or stops) must not read code compiled the other way."""
    from jinja2 import pass_context

    loader = DictLoader({"t.txt": "{{ x|mark }}"})

    def plain(text):
        return f"<{text}>"

    @pass_context
    def with_context(context, text):
        return f"<{text} in {context.get('where')}>"

    old = cached_environment(Environment, loader, {"mark": plain})
    assert old.get_template("t.txt").render(x="a") == "<a>"
    new = cached_environment(Environment, loader, {"mark": with_context})
    assert new.get_template("t.txt").render(x="a", where="b") == "<a in b>"


def test_each_archive_is_named_once_in_its_own_report(ruleset, kept, tmp_path):
    """One environment serves every report of a process (`batch --reports`): the archive a
    file name is cut from is each report's own."""
    import tarfile

    pages = []
    for name in ("first", "second"):
        archive = tmp_path / f"{name}.tar.gz"
        with tarfile.open(archive, "w:gz") as tf:
            tf.add(SAMPLES / "rbac-patch-forbidden" / "bundle", arcname=f"{name}-top")
        report = analyze([str(archive)], AnalyzeOptions(ruleset=ruleset)).report
        pages.append((name, html_mod.render_html(report)))
    for name, page in pages:
        assert page.count(f"{name}.tar.gz") == 1  # named once, at the top
        assert "tar.gz!" not in page and "-top/" not in page
        assert "device-plugin.log:" in page
