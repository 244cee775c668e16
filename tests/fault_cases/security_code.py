"""Code from a config, a results folder or a cache: nothing runs without the user's consent.

A config may name a plug-in (a ``module:Name`` reference, an installed entry point): without
``--allow-plugins`` / ``DMLBENCH_ALLOW_PLUGINS=1`` / a ``plugins:`` list in the settings file it is
refused in one line that names it and the ways to consent, in ``validate`` as in ``run``, and
its module is not imported; with consent only a class is accepted, and ``validate`` never calls
it. The constraint cache holds checksummed ``.npy`` arrays: a damaged, truncated, foreign or
planted entry (a pickle, an object array) is recomputed with one warning line per entry and the
run's rows are as on a clean cache; nothing in it is unpickled.

Every case sets ``DMLBENCH_SETTINGS`` to ``{work}/settings.yaml`` (no such file unless the case
writes it), so the messages name that path whatever the user's own settings are.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import sys
import zipfile

import numpy as np
import yaml
from click.testing import CliRunner

from dml_bench.experiment import knn as tasks
from dml_bench.cli import main
from dml_bench.datasets import DATASETS
from dml_bench.solvers import SOLVERS

from . import GOOD, NAME, Case, changed

SETTINGS = "{work}/settings.yaml"


def consent(allow: str) -> str:
    """The end of the line refusing a plug-in without consent (``allow``: what to list)."""
    return ("is a plug-in: importing it runs its code, so it needs your consent: pass "
            f"--allow-plugins, set DMLBENCH_ALLOW_PLUGINS=1, or list {allow!r} under plugins: in "
            + SETTINGS)


NOT_A_CLASS = "is a {kind}, not a {what} class (plug-ins are classes; see dml_bench.registry)"
GENERATORS = "knn_pairs, knn_triplets, random_triplets"
PLUGIN = "dmlb_corpus_plugin"
DIST = f"(from {PLUGIN} 0.1)"
#: GOOD plus iris: the 2 iris tasks run (wine's 2 are done) and need their constraints
WITH_IRIS = changed(datasets=[{"name": "wine"}, {"name": "iris"}])
IRIS_RUN = f"{NAME}: 2 tasks run, 2 already done, 0 failed, 0 dataset×solver skipped"


def _settings(consent: bool = False, text: str | None = None):
    """Setup: the settings file is ``{work}/settings.yaml`` (written when ``text`` is given);
    ``consent`` sets ``DMLBENCH_ALLOW_PLUGINS=1``. ``tempfile.mkdtemp`` records its calls in
    ``ctx.extra['mkdtemp']`` instead of making folders."""
    def setup(ctx):
        ctx.monkeypatch.setenv("DMLBENCH_SETTINGS", str(ctx.work / "settings.yaml"))
        ctx.monkeypatch.setenv("DMLBENCH_ALLOW_PLUGINS", "1" if consent else "0")
        if text is not None:
            (ctx.work / "settings.yaml").write_text(text)
        calls = ctx.extra["mkdtemp"] = []
        ctx.monkeypatch.setattr("tempfile.mkdtemp", lambda *a, **k: calls.append(a))
    return setup


def _not_called(ctx, output):
    assert ctx.extra["mkdtemp"] == []


# --------------------------------------------------------------------------- entry points

PLUGIN_SOURCE = '''
"""A plug-in that shows when it is imported or called: each writes a file in {outside}."""
import os

OUTSIDE = {outside!r}
if {mark_import!r}:
    open(os.path.join(OUTSIDE, "imported"), "w").close()


class Evil:
    constraint_kind = "labels"

    def __init__(self):
        open(os.path.join(OUTSIDE, "instantiated"), "w").close()

    def get_params(self, deep=True):
        return {{}}

    def fit(self, X, y=None, constraints=None):
        return self

    def transform(self, X):
        return X


class Data:
    """Data that would be loaded by running code."""

    n_samples, n_features, n_classes = 150, 4, 3

    def __init__(self):
        open(os.path.join(OUTSIDE, "instantiated"), "w").close()

    def load(self, paths):
        open(os.path.join(OUTSIDE, "loaded"), "w").close()
        raise RuntimeError("never reached in these cases")
'''


def _installed(mark_import: bool, consent: bool = False):
    """Setup: a plug-in distribution on ``sys.path`` (``{work}/site``) declaring the solver
    ``evil`` and the dataset ``data``; its module writes ``{outside}/imported`` when imported
    (``mark_import``), and its classes write there when instantiated or loaded."""
    settings = _settings(consent)

    def setup(ctx):
        settings(ctx)
        site = ctx.work / "site"
        info = site / f"{PLUGIN}-0.1.dist-info"
        info.mkdir(parents=True)
        (site / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE.format(outside=str(ctx.outside),
                                                                mark_import=mark_import))
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PLUGIN}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[dml_bench.solvers]\nevil = {PLUGIN}:Evil\n"
                                               f"[dml_bench.datasets]\ndata = {PLUGIN}:Data\n")
        ctx.monkeypatch.syspath_prepend(str(site))
        ctx.monkeypatch.setitem(sys.modules, PLUGIN, None)  # removed again after the case
        del sys.modules[PLUGIN]
        for registry in (SOLVERS, DATASETS):
            ctx.monkeypatch.setattr(registry, "_plugins", {})
    return setup


def _not_imported(ctx, output):
    assert PLUGIN not in sys.modules
    assert not any(ctx.outside.glob("i*"))


def _imported_not_called(ctx, output):
    assert PLUGIN in sys.modules
    assert sorted(p.name for p in ctx.outside.iterdir()) == ["keep.txt"]


def _entry_point(kind: str, name: str, target: str) -> str:
    return (f"{kind} {name!r} (entry point {name} = {PLUGIN}:{target} {DIST} of group "
            f"dml_bench.{kind}s)")


# --------------------------------------------------------------------------- the constraint cache


def _cached(damage):
    """Setup: iris's constraints of GOOD's 2 splits computed into the case's cache (by a run into
    ``{work}/pre``), then each entry damaged by ``damage(npz, meta, ctx) -> reason``; the
    expected warning lines go to ``ctx.extra['warnings']``."""
    settings = _settings()

    def setup(ctx):
        settings(ctx)
        pre = ctx.work / "pre.yaml"
        pre.write_text(yaml.safe_dump({**GOOD, "name": "pre", "datasets": [{"name": "iris"}]}))
        result = CliRunner().invoke(main, ["run", str(pre), "--results-dir", str(ctx.work / "pre")])
        assert result.exit_code == 0, result.output
        tasks._prepare_split.cache_clear()  # the case's run reads the disk, not this process
        entries = sorted((ctx.cache / "constraints").glob("knn_triplets-*.npz"))
        assert len(entries) == 2, entries
        ctx.extra["warnings"] = [
            f"warning: constraint cache entry {npz} is damaged "
            f"({damage(npz, npz.with_suffix('.json'), ctx)}); recomputed" for npz in entries]
    return setup


def _recomputed(ctx, output):
    """Check: one warning line per damaged entry (in the order the splits ran), nothing
    unpickled, and each entry rewritten (a checksummed .npz that the next run reads)."""
    lines = output.splitlines()
    assert sorted(line for line in lines if line.startswith("warning:")) == ctx.extra["warnings"]
    assert not (ctx.outside / "unpickled").exists()
    for npz in (ctx.cache / "constraints").glob("knn_triplets-*.npz"):
        info = json.loads(npz.with_suffix(".json").read_text())
        assert info["sha256"] == hashlib.sha256(npz.read_bytes()).hexdigest()


class Planted:
    """Unpickling it creates ``{outside}/unpickled``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def _rehash(npz, meta):
    """The checksum file rewritten to match the planted .npz, as whoever planted it would."""
    meta.write_text(json.dumps({**json.loads(meta.read_text()),
                                "sha256": hashlib.sha256(npz.read_bytes()).hexdigest()}))


def _flip(npz, meta, ctx):
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0xFF
    npz.write_bytes(bytes(data))
    return "checksum mismatch"


def _truncate(npz, meta, ctx):
    npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
    return "checksum mismatch"


def _swap_checksums(npz, meta, ctx):
    """Each entry gets the other entry's checksum file (a foreign one)."""
    metas = sorted((ctx.cache / "constraints").glob("knn_triplets-*.json"))
    if "swapped" not in ctx.extra:
        texts = [m.read_text() for m in metas]
        metas[0].write_text(texts[1])
        metas[1].write_text(texts[0])
        ctx.extra["swapped"] = True
    return f"its checksum file {meta.name} is another entry's"


def _pickle(npz, meta, ctx):
    npz.write_bytes(pickle.dumps(Planted(ctx.outside / "unpickled")))
    _rehash(npz, meta)
    old = ctx.cache / "constraints" / "joblib" / "dml_bench" / "constraints" / "_timed" / "0"
    old.mkdir(parents=True, exist_ok=True)  # where joblib.Memory kept its pickles
    (old / "output.pkl").write_bytes(pickle.dumps(Planted(ctx.outside / "unpickled")))
    return "not a readable .npz: File is not a zip file"


def _object_array(npz, meta, ctx):
    """The .npz holds an object array (a pickle after a .npy header, as numpy writes one)."""
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "|O", "fortran_order": False,
                                                  "shape": (1,)})
    member.write(pickle.dumps(np.array([Planted(ctx.outside / "unpickled"), None])[:1]))
    data = io.BytesIO()
    with zipfile.ZipFile(npz) as old, zipfile.ZipFile(data, "w") as new:
        for name in old.namelist():
            new.writestr(name, member.getvalue() if name == "similar.npy" else old.read(name))
    npz.write_bytes(data.getvalue())
    _rehash(npz, meta)
    return "member 'similar.npy' holds Python objects (a pickle), which are never loaded"


CASES = [
    # -- references without consent: refused before anything is imported or called
    Case("code-reference-dataset-validate", "security", changed(datasets=["tempfile:mkdtemp"]),
         argv=("validate", "{cfg}"), setup=_settings(), check=_not_called,
         line="{cfg}: datasets[0].name: dataset 'tempfile:mkdtemp' (a reference to module "
              "'tempfile') " + consent("tempfile")),
    Case("code-reference-dataset-run", "security", changed(datasets=["tempfile:mkdtemp"]),
         setup=_settings(), check=_not_called,
         line="{cfg}: datasets[0].name: dataset 'tempfile:mkdtemp' (a reference to module "
              "'tempfile') " + consent("tempfile")),
    Case("code-reference-solver", "security", changed(solvers=["os:getcwd"]), setup=_settings(),
         line="{cfg}: solvers[0].name: solver 'os:getcwd' (a reference to module 'os') "
              + consent("os")),
    Case("code-reference-generator", "security", changed(constraints={"generator": "os:getcwd"}),
         setup=_settings(consent=True),
         line="{cfg}: constraints.generator: unknown constraint generator 'os:getcwd'. Valid "
              f"names: {GENERATORS}"),
    # -- with consent, only classes; validate never calls one
    Case("code-reference-function-with-consent", "security",
         changed(datasets=["tempfile:mkdtemp"]), argv=("validate", "{cfg}"),
         setup=_settings(consent=True), check=_not_called,
         line="{cfg}: datasets[0].name: dataset 'tempfile:mkdtemp': "
              + NOT_A_CLASS.format(kind="function", what="dataset")),
    Case("code-reference-builtin-with-consent", "security", changed(solvers=["os:getcwd"]),
         setup=_settings(consent=True),
         line="{cfg}: solvers[0].name: solver 'os:getcwd': "
              + NOT_A_CLASS.format(kind="builtin_function_or_method", what="solver")),
    Case("code-reference-module-with-consent", "security", changed(datasets=["os:path"]),
         setup=_settings(text="plugins: [os]\n"), check=_not_called,
         line="{cfg}: datasets[0].name: dataset 'os:path': "
              + NOT_A_CLASS.format(kind="module", what="dataset")),
    # -- installed entry points
    Case("entry-point-without-consent", "security", changed(solvers=["evil"]),
         setup=_installed(mark_import=True), check=_not_imported,
         line="{cfg}: solvers[0].name: " + _entry_point("solver", "evil", "Evil") + " "
              + consent("evil")),
    Case("entry-point-dataset-validate-without-consent", "security", changed(datasets=["data"]),
         argv=("validate", "{cfg}"), setup=_installed(mark_import=True), check=_not_imported,
         line="{cfg}: datasets[0].name: " + _entry_point("dataset", "data", "Data") + " "
              + consent("data")),
    Case("entry-point-listed-without-consent", "security", argv=("solvers",), code=0,
         setup=_installed(mark_import=True), check=_not_imported,
         line=f"evil plug-in evil = {PLUGIN}:Evil {DIST} — cannot be used: not loaded: needs "
              f"--allow-plugins, DMLBENCH_ALLOW_PLUGINS=1 or 'evil' under plugins: in {SETTINGS}"),
    Case("entry-point-validate-with-consent-calls-nothing", "security",
         changed(datasets=["data"], solvers=["evil"]), argv=("validate", "{cfg}"), code=0,
         setup=_installed(mark_import=False, consent=True), check=_imported_not_called,
         line="{cfg}: ok (1 datasets × 1 solvers, 2 tasks)"),
    # -- consent that cannot be read
    Case("settings-file-not-a-list", "security", changed(solvers=["os:getcwd"]),
         setup=_settings(text="plugins: os\n"),
         line="{cfg}: solvers[0].name: settings file " + SETTINGS + ": plugins: expected a list "
              "of module or entry-point names, got str 'os'"),
    Case("settings-file-python-tag", "security", changed(solvers=["os:getcwd"]),
         setup=_settings(text="plugins: !!python/object/apply:os.getcwd []\n"),
         line="{cfg}: solvers[0].name: settings file " + SETTINGS + ": not valid YAML: line 1, "
              "column 10: could not determine a constructor for the tag "
              "'tag:yaml.org,2002:python/object/apply:os.getcwd'"),
    # -- a config that would build objects (kept: PyYAML's safe loader refuses the tag)
    Case("yaml-python-object-tag", "security",
         "name: !!python/object/apply:os.system ['echo owned']\ndatasets: [wine]\n"
         "solvers: [euclidean]\n", argv=("validate", "{cfg}"), setup=_settings(),
         line="{cfg}: <top>: not valid YAML: line 1, column 7: could not determine a constructor "
              "for the tag 'tag:yaml.org,2002:python/object/apply:os.system'"),
    # -- the constraint cache: recomputed with one line per entry, never unpickled
    Case("constraint-cache-flipped-byte", "security", WITH_IRIS, code=0, line=IRIS_RUN,
         rows_after=4, setup=_cached(_flip), check=_recomputed),
    Case("constraint-cache-truncated", "security", WITH_IRIS, code=0, line=IRIS_RUN,
         rows_after=4, setup=_cached(_truncate), check=_recomputed),
    Case("constraint-cache-foreign-checksum", "security", WITH_IRIS, code=0, line=IRIS_RUN,
         rows_after=4, setup=_cached(_swap_checksums), check=_recomputed),
    Case("constraint-cache-crafted-pickle", "security", WITH_IRIS, code=0, line=IRIS_RUN,
         rows_after=4, setup=_cached(_pickle), check=_recomputed),
    Case("constraint-cache-object-array", "security", WITH_IRIS, code=0, line=IRIS_RUN,
         rows_after=4, setup=_cached(_object_array), check=_recomputed),
]
