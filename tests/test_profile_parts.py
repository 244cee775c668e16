"""``benchmarks/timing/profile_parts.py``: py-spy's collapsed stacks charged to statements and
classes."""

import pytest

# three stacks in py-spy's raw format (frames root first, ';'-joined, then the sample count), as it
# writes them for a board worker: a relative path from sys.path, an absolute one, no package frame
RAW = """\
<module> (dml_bench/leaderboard.py:891);PairOuterSum.__call__ (dml_bench/solvers/linalg.py:465);\
dgemm_kernel_SKYLAKEX (libscipy_openblas64_-32a4b2a6.so) 6
<module> (dml_bench/leaderboard.py:891);PairOuterSum.__call__ (dml_bench/solvers/linalg.py:465);\
0x7f569138bb75 (libc.so.6) 1
run (/venv/lib/python3.11/site-packages/dml_bench/solvers/linalg.py:460);0x7f5690abb3bb (?) 2
<module> (joblib/parallel.py:10);dsymv_kernel_4x4.constprop.0 (libscipy_openblas-6cdc3b4a.so) 1
"""


@pytest.fixture(scope="module")
def profile_parts(benchmark_script):
    return benchmark_script("timing/profile_parts")


def test_samples_are_charged_to_the_innermost_package_statement(profile_parts, tmp_path):
    raw = tmp_path / "gd.txt"
    raw.write_text(RAW)
    df = profile_parts.parts(raw)
    got = {(r.statement, r.native): r.samples for r in df.itertuples()}
    assert got == {
        ("PairOuterSum.__call__ (dml_bench/solvers/linalg.py:465)", "gemm"): 6,
        ("PairOuterSum.__call__ (dml_bench/solvers/linalg.py:465)", "libc"): 1,
        ("run (dml_bench/solvers/linalg.py:460)", "jit"): 2,
        ("(outside the package)", "lapack/blas"): 1,
    }
    assert df.share.tolist() == [0.6, 0.2, 0.1, 0.1]      # of 10 samples, largest first


def test_a_python_leaf_is_its_own_class(profile_parts):
    assert profile_parts.native_class("f (dml_bench/x.py:3)") == "python"
    assert profile_parts.native_class("memcpy (libc.so.6)") == "libc"
