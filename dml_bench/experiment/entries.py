"""The ``datasets:`` entries of a config, read into the registry names that resolve them.

An entry is a registered dataset's name (bare, ``wine``, or ``{name: wine, ...}``), a user's data
file (``path:``), an OpenML dataset (``openml:``), every dataset of an OpenML benchmark suite
(``openml_suite:``), or ``lfw_sift`` with the user's file (``{name: lfw_sift, path: ...}``). The
readers here turn each into a ``{name: <registry name>, ...}`` mapping that
:func:`~dml_bench.experiment.config.parse_config` checks against :data:`~.schema.DATASET`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DMLBenchError
from .schema import DATASET, Reader

#: the keys of a nameless entry that give its data: a file or an OpenML dataset
_SOURCES = ("path", "openml")
#: the options of an ``openml_suite:`` entry that select its datasets (see :func:`expand_suites`)
_SUITE_LIMITS = ("max_datasets", "max_instances", "max_features")


def expand_suites(r: Reader, entries: list) -> list[tuple[str, Any]]:
    """The ``datasets:`` entries as ``(key path, entry)``, each ``openml_suite:`` entry (an
    OpenML benchmark suite's alias or id, e.g. ``OpenML-CC18``) replaced by one ``openml: <id>``
    entry per dataset of the suite, smallest first, each with the suite entry's other options
    (normalize, pca, ...; ``max_datasets`` / ``max_instances`` / ``max_features`` select the
    datasets, see :func:`~dml_bench.datasets.openml_source.openml_suite_datasets`). Listing the
    suite needs the network: without it the suite is a one-line ``DataNotAvailable`` naming it.
    """
    out = []
    for i, entry in enumerate(entries):
        p = f"datasets[{i}]"
        if not isinstance(entry, dict) or "openml_suite" not in entry:
            out.append((p, entry))
            continue
        from ..datasets import DataNotAvailable
        from ..datasets.openml_source import openml_suite_datasets

        entry = dict(entry)
        suite = entry.pop("openml_suite")
        r.check(isinstance(suite, (int, str)) and not isinstance(suite, bool)
                and bool(str(suite).strip()), f"{p}.openml_suite",
                f"expected an OpenML suite alias or id, got {suite!r}")
        clash = [key for key in ("name", "label", *_SOURCES) if key in entry]
        r.check(not clash, p, f"{', '.join(clash)} cannot go with `openml_suite:` (each of its "
                "datasets is an `openml: <id>` entry labelled openml_<id>)")
        limits = {key: entry.pop(key) for key in _SUITE_LIMITS if key in entry}
        for key, value in limits.items():
            r.check(isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                    f"{p}.{key}", f"expected a positive integer, got {value!r}")
        r.section({**entry, "name": "-"}, DATASET, p)  # the copied options, before the network
        try:
            ids = openml_suite_datasets(suite, **limits)
        except DataNotAvailable as exc:
            raise DataNotAvailable(f"{r.source}: {p}.openml_suite: {exc}") from exc
        within = ", ".join(f"{key} = {value}" for key, value in limits.items())
        r.check(bool(ids), f"{p}.openml_suite",
                f"OpenML suite {suite!r} has no dataset" + (f" within {within}" if within else ""))
        out += [(p, {**entry, "openml": did}) for did in ids]
    return out


def source_entry(r: Reader, entry: Any, path: str, check_data: bool) -> Any:
    """A nameless dataset entry whose data is a user's file (``path:`` a CSV / ARFF / LIBSVM file,
    with ``label_column:`` for CSV and ARFF) or an OpenML dataset (``openml:`` an id or name) is
    the entry of the registry name that resolves it (``file:<path>?label_column=<column>``,
    ``openml:<id>``), labelled by default after the file's stem / ``openml_<id>``; other options
    (normalize, dtype, ...) as for any dataset. With ``check_data`` a file is read here, so that
    a missing column or an unparseable file is a config error. Anything else is returned as is.
    """
    if not isinstance(entry, dict) or "name" in entry or not set(_SOURCES) & set(entry):
        return entry
    from ..datasets.loader import FILE_FORMATS, file_reference

    entry = dict(entry)
    r.check(len(set(_SOURCES) & set(entry)) == 1, path,
            "give one of `path:` (a data file) and `openml:` (an OpenML dataset), not both")
    if "openml" in entry:
        ref = entry.pop("openml")
        r.check(isinstance(ref, (int, str)) and not isinstance(ref, bool) and bool(str(ref).strip()),
                f"{path}.openml", f"expected an OpenML dataset id or name, got {ref!r}")
        return {**entry, "name": f"openml:{ref}", "label": entry.get("label") or f"openml_{ref}"}
    file, label_column = entry.pop("path"), entry.pop("label_column", None)
    r.check(isinstance(file, str) and bool(file), f"{path}.path", f"expected a file path, got {file!r}")
    r.check(label_column is None or isinstance(label_column, str), f"{path}.label_column",
            f"expected a column name, got {label_column!r}")
    suffix = Path(file).suffix.lower()
    r.check(suffix in FILE_FORMATS, f"{path}.path",
            f"unknown file type {suffix!r} of {file}; supported: {', '.join(FILE_FORMATS)}")
    if FILE_FORMATS[suffix] == "libsvm":
        r.check(label_column is None, f"{path}.label_column",
                "a LIBSVM file holds its labels in each line's first field: drop label_column")
    else:
        r.check(label_column is not None, path,
                f"a {suffix} file needs `label_column:` (the column holding the class)")
    r.check(Path(file).exists(), f"{path}.path", f"file {file} not found (relative paths are "
            f"read from the working directory, {Path.cwd()})")
    name = file_reference(file, label_column)
    if check_data:
        from ..datasets import DATASETS, DataIntegrityError, DataNotAvailable

        try:
            DATASETS[name]  # reads the file: a bad column or format is reported here
        except DMLBenchError as exc:  # but a file that cannot be read is skipped by the run
            if not (isinstance(exc, DataNotAvailable) and (not isinstance(exc, DataIntegrityError)
                                                           or isinstance(exc.__cause__, OSError))):
                r.fail(path, str(exc))
    return {**entry, "name": name, "label": entry.get("label") or Path(file).stem}


def named_path(r: Reader, entry: Any, path: str) -> tuple[Any, str | None]:
    """A NAMED entry with ``path:`` (``{name: lfw_sift, path: /my/lfw_sift.mat}``): the file
    that replaces the registered dataset's own, for ``lfw_sift`` only (the entry without it,
    and the path). A nameless ``path:`` entry is a user's data file (:func:`source_entry`)."""
    if not isinstance(entry, dict) or "name" not in entry or "path" not in entry:
        return entry, None
    entry = dict(entry)
    file = entry.pop("path")
    r.check(entry["name"] == "lfw_sift", f"{path}.path",
            f"a named dataset takes `path:` only for lfw_sift (the user's LFW-SIFT file), not "
            f"{entry['name']!r}; for a data file of your own drop `name:`")
    r.check(isinstance(file, str) and bool(file), f"{path}.path", f"expected a file path, got {file!r}")
    return entry, file


def bare_name(entry: Any) -> Any:
    """A dataset or solver entry given as a bare name (``datasets: [wine]``) is that entry with
    its defaults, ``{name: wine}``; anything else is checked as it is."""
    return {"name": entry} if isinstance(entry, str) else entry
