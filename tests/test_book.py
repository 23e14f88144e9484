"""The book in docs/ (and the README): it builds with no warnings, no link
in it is broken, its generated reference matches the binary, and every
sample that is a complete config or plugin works: configs pass
`wasm-mcp config check`, plugins build and answer a call.

A code block is checked by its language: `toml` blocks are configs and
`json` blocks JSON. A block may be marked, on the line before it, with
`<!-- sample: fragment -->` (only its syntax is checked: part of a file,
a Cargo.toml), `<!-- sample: manifest -->` (a plugin's manifest, checked
against its schema) or `<!-- sample: plugin LANGUAGE -->` (built
as the whole module of a new plugin of that language, then served and
called). A block in a plugin language must carry one of the two marks,
so that no sample escapes a check by being forgotten."""

import ast
import html.parser
import json
import os
import re
import subprocess
import tomllib
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conftest import BINARY, ROOT

from test_first_minutes import author_env, build, first_list_and_call, new  # noqa: F401

DOCS = ROOT / "docs"
MDBOOK = ROOT / ".cache" / "mdbook" / "bin" / "mdbook"
PLUGIN_LANGUAGES = {"rust", "python", "js", "javascript", "c", "go"}
FENCE = re.compile(r"^(?P<mark><!-- sample: (?P<kind>[a-z]+)(?: (?P<lang>[a-z]+))? -->\n)?"
                   r"```(?P<info>[^\n]*)\n(?P<body>.*?)^```\s*$", re.S | re.M)


def sources():
    return sorted((DOCS / "src").rglob("*.md")) + [ROOT / "README.md"]


def samples():
    """(file, line, language, mark, mark's language, body) of every fenced block."""
    found = []
    for path in sources():
        text = path.read_text()
        for m in FENCE.finditer(text):
            line = text[: m.start()].count("\n") + 1
            language = m.group("info").split(",")[0].strip()
            found.append((path, line, language, m.group("kind"), m.group("lang"), m.group("body")))
    return found


def where(path, line):
    return f"{path.relative_to(ROOT)}:{line}"


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """The book built from scratch into a folder of its own."""
    out = tmp_path_factory.mktemp("book")
    built = subprocess.run([str(MDBOOK), "build", str(DOCS), "--dest-dir", str(out)],
                           capture_output=True, text=True, timeout=300)
    return built, out


def test_the_book_builds_with_no_warning(book):
    built, out = book
    said = built.stdout + built.stderr
    assert built.returncode == 0, said
    noisy = [line for line in said.splitlines() if re.search(r"\b(WARN|ERROR)\b", line)]
    assert noisy == [], said
    # Every chapter of the summary is there, and none is empty.
    chapters = re.findall(r"\]\(([^)]+\.md)\)", (DOCS / "src" / "SUMMARY.md").read_text())
    assert len(chapters) >= 25, chapters
    for chapter in chapters:
        page = out / chapter.replace(".md", ".html")
        assert page.is_file(), chapter
        source = (DOCS / "src" / chapter).read_text()
        assert len(source.split()) > 40, f"{chapter} is nearly empty"


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if name in ("href", "src") and value:
                self.links.append(value)


def parsed(page, cache={}):
    if page not in cache:
        parser = Links()
        parser.feed(page.read_text(errors="replace"))
        cache[page] = parser
    return cache[page]


def test_no_link_in_the_book_is_broken(book):
    _, out = book
    broken = []
    pages = sorted(out.rglob("*.html"))
    assert len(pages) > 25
    for page in pages:
        for link in parsed(page).links:
            parts = urlsplit(link)
            # The 404 page links to the site's root, wherever it is served.
            if parts.scheme or link.startswith("//") or (page.name == "404.html" and link.startswith("/")):
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(out)}: {link}")
            elif parts.fragment and target.suffix == ".html":
                if unquote(parts.fragment) not in parsed(target).ids:
                    broken.append(f"{page.relative_to(out)}: {link} (no such anchor)")
    assert broken == [], "\n".join(broken)


def test_the_readme_links_only_to_files_that_are_there():
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert any(link.startswith("docs/") for link in links), "the README links into the book"
    for link in links:
        if urlsplit(link).scheme:
            continue
        assert (ROOT / unquote(urlsplit(link).path)).exists(), link


def test_the_generated_reference_matches_the_binary():
    checked = subprocess.run([str(ROOT / "scripts" / "docs-reference"), "--check"],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stderr


def test_every_config_key_is_documented_and_the_reference_names_no_other():
    accepted = documented_keys()
    page = (DOCS / "src" / "reference" / "config.md").read_text()
    documented = set()
    table = None
    for line in page.splitlines():
        if m := re.match(r"^## `\[(.+)\]`", line):
            table = m.group(1)
        elif (m := re.match(r"^\| `([a-z_]+)` \|", line)) and table:
            documented.add(f"{table}.{m.group(1)}")
    assert documented == accepted
    assert len(accepted) > 130
    # A key the host refuses is refused by `config check` with its path.
    bogus = ROOT / "target" / "bogus-key.toml"
    bogus.write_text("[server]\npage_size = 10\nno_such_key = 1\n")
    checked = subprocess.run([str(BINARY), "config", "check", "--no-files", str(bogus)],
                             capture_output=True, text=True)
    assert checked.returncode == 1 and "server.no_such_key: unknown field" in checked.stdout, checked.stdout


def documented_keys():
    """Every key path the reference documents, from the schema."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("docs_reference", str(ROOT / "scripts" / "docs-reference"))
    spec = importlib.util.spec_from_loader("docs_reference", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    schema = json.loads(subprocess.run([str(BINARY), "config", "schema"], check=True,
                                       capture_output=True, text=True).stdout)
    return set(module.keys_of(schema))


SECTIONS = "server|limits|http|tasks|metrics|signatures|traces|state|cluster|audit"


def test_every_key_the_book_names_in_its_text_is_one_the_host_accepts():
    """`[server] max_instances`, `[plugins.NAME] env`, `limits.memory_mb`:
    the keys chapters name in passing exist."""
    keys = documented_keys()
    tables = {k.rsplit(".", 1)[0] for k in keys}
    named = {}
    generated = {"cli.md", "config.md", "limits.md"}
    for path in sources():
        if path.parent.name == "reference" and path.name in generated:
            continue
        text = path.read_text()
        for m in re.finditer(r'\[([a-z_]+(?:\.(?:[a-z_]+|NAME|P|<name>|"[^"]*"))*)\] ([a-z_]+)\b', text):
            table = re.sub(r'\.(NAME|P|<name>|"[^"]*")', ".<name>", m.group(1))
            if table.split(".")[0] in ("plugins", "roots", "profiles", "registries") and "." not in table:
                continue  # `[plugins] x` is not how a key is named
            named.setdefault(f"{table}.{m.group(2)}", where(path, text[: m.start()].count("\n") + 1))
        for m in re.finditer(rf"`((?:{SECTIONS})(?:\.[a-z_]+)+)`", text):
            named.setdefault(m.group(1), where(path, text[: m.start()].count("\n") + 1))
    unknown = sorted(f"{at}: {key}" for key, at in named.items() if key not in keys and key not in tables)
    assert unknown == [], "\n".join(unknown)
    assert len(named) > 20, sorted(named)


def test_every_sample_carries_a_check():
    unmarked = [where(p, n) for p, n, lang, kind, _, _ in samples()
                if lang in PLUGIN_LANGUAGES and kind is None]
    assert unmarked == [], "mark these as `<!-- sample: plugin LANG -->` or fragment: " + ", ".join(unmarked)
    kinds = {kind for *_, kind, _, _ in samples() if kind}
    assert kinds <= {"fragment", "plugin", "manifest"}, kinds


def test_every_config_in_the_book_passes_config_check(tmp_path):
    checked, failed = 0, []
    for path, line, language, kind, _, body in samples():
        if language == "json":
            if kind != "fragment":
                json.loads(body)
            continue
        if language != "toml":
            continue
        try:
            tomllib.loads(body)
        except tomllib.TOMLDecodeError as e:
            pytest.fail(f"{where(path, line)}: not TOML: {e}")
        if kind in ("fragment", "manifest"):
            continue
        config = tmp_path / f"sample-{checked}.toml"
        config.write_text(body)
        result = subprocess.run([str(BINARY), "config", "check", "--no-files", str(config)],
                                capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            failed.append(f"{where(path, line)}:\n{result.stdout}{result.stderr}")
        checked += 1
    assert failed == [], "\n".join(failed)
    assert checked >= 10, checked


def test_an_editor_given_the_schema_accepts_every_config_sample_and_flags_a_bad_key():
    """What an editor with TOML schema support does with `config schema`'s
    output, done by a JSON Schema validator: the book's configs are valid,
    a mistyped key, a wrong type and a bad word are not."""
    import jsonschema
    schema = json.loads(subprocess.run([str(BINARY), "config", "schema"], check=True,
                                       capture_output=True, text=True).stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    configs = [tomllib.loads(body) for _, _, lang, kind, _, body in samples()
               if lang == "toml" and kind not in ("fragment", "manifest")]
    assert len(configs) >= 10
    for config in configs:
        errors = [e.message for e in validator.iter_errors(config)]
        assert errors == [], (config, errors)
    for bad in ('[server]\npage_sise = 10\n', '[limits]\nmemory_mb = "lots"\n',
                '[limits]\nspare_instance = "sometimes"\n', '[plugins.x]\nroots = "docs"\n',
                '[http.auth.jwt]\nissuer = "x"\n'):
        assert list(validator.iter_errors(tomllib.loads(bad))), bad


def test_every_manifest_in_the_book_fits_the_manifest_schema():
    import jsonschema
    schema = json.loads(subprocess.run([str(BINARY), "config", "schema", "--manifest"], check=True,
                                       capture_output=True, text=True).stdout)
    validator = jsonschema.Draft202012Validator(schema)
    manifests = [(where(p, n), tomllib.loads(body)) for p, n, lang, kind, _, body in samples()
                 if kind == "manifest"]
    assert manifests
    for at, manifest in manifests:
        errors = [e.message for e in validator.iter_errors(manifest)]
        assert errors == [], (at, errors)
    assert list(validator.iter_errors({"host": ["x"]}))
    assert list(validator.iter_errors({"roots": {"a": "write-only"}}))


def test_every_fragment_of_code_is_at_least_well_formed():
    for path, line, language, kind, _, body in samples():
        if kind == "fragment" and language == "python":
            try:
                ast.parse(body)
            except SyntaxError as e:
                pytest.fail(f"{where(path, line)}: {e}")


PLUGIN_SAMPLES = [(p, n, lang, body) for p, n, _, kind, lang, body in samples() if kind == "plugin"]


@pytest.mark.parametrize("sample", PLUGIN_SAMPLES,
                         ids=[where(p, n) for p, n, _, _ in PLUGIN_SAMPLES])
def test_every_plugin_sample_builds_and_answers_a_call(tmp_path, author_env, sample):  # noqa: F811
    path, line, language, body = sample
    module = {"rust": "src/lib.rs", "python": "app.py", "js": "app.js"}[language]
    folder = new(language, f"sample-{language}", tmp_path, author_env)
    (folder / module).write_text(body)
    built = build(folder, author_env)
    assert built.returncode == 0, f"{where(path, line)}:\n{built.stderr[-3000:]}"
    # The sample's greet tool answers, served as the book says.
    assert any(t.endswith("greet") for t in first_list_and_call(folder, author_env))


def test_plugin_samples_cover_the_sdks():
    assert {lang for *_, lang, _ in PLUGIN_SAMPLES} >= {"rust", "python", "js"}


def test_the_examples_config_passes_a_full_check():
    (ROOT / "dist" / "memory").mkdir(parents=True, exist_ok=True)  # as scripts/serve makes it
    result = subprocess.run([str(BINARY), "config", "check", str(ROOT / "examples" / "serve.toml")],
                            capture_output=True, text=True, timeout=30, cwd=ROOT,
                            env=dict(os.environ))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok" in result.stdout
