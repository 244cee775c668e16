"""Box-constrained L-BFGS-B with array bounds: scipy's compiled routine, driven directly.

Solver stage. ``scipy.optimize.minimize(method="L-BFGS-B")`` turns a ``Bounds`` object into a list
of per-variable pairs and back, then builds the routine's bound codes in a third per-variable
Python pass. For the duals of FrobMetric and of the Frobenius SDPs (Shen et al. 2014, Eqs. (5)
and (10)), one variable per constraint (10⁴–10⁵ of them), these passes cost as much as the
iterations themselves. :func:`minimize_box` builds the codes with array operations and runs the
same reverse-communication loop as scipy (``setulb``), so it visits the same iterates bit for bit
(``tests/test_lbfgsb.py`` checks it against ``minimize``). Where the installed scipy's routine does
not have the call signature this loop was written for (scipy ≥ 1.15), it calls ``minimize``.

References
----------
R. H. Byrd, P. Lu, J. Nocedal and C. Zhu. A limited memory algorithm for bound constrained
optimization. SIAM J. Sci. Comput. 16(5):1190–1208, 1995.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, OptimizeResult, minimize

try:  # the compiled routine and its messages (private to scipy: checked below before use)
    from scipy.optimize import _lbfgsb
    from scipy.optimize._lbfgsb_py import status_messages, task_messages
except ImportError:  # pragma: no cover - a scipy without them takes minimize
    _lbfgsb = status_messages = task_messages = None

#: The ``setulb`` signature that :func:`_drive` follows (scipy's C translation of L-BFGS-B).
SETULB_SIGNATURE = "setulb(m,x,l,u,nbd,f,g,factr,pgtol,wa,iwa,task,lsave,isave,dsave,maxls,ln_task)"


def direct_available() -> bool:
    """Whether the installed scipy's ``setulb`` has the signature :func:`_drive` calls."""
    doc = getattr(getattr(_lbfgsb, "setulb", None), "__doc__", None) or ""
    return status_messages is not None and doc.strip().startswith(SETULB_SIGNATURE)


def minimize_box(fun, x0, lower, upper, *, callback=None, maxiter=15000, maxfun=15000, maxls=20,
                 maxcor=10, gtol=1e-5, ftol=2.2204460492503131e-09, direct=None):
    """Minimise ``fun`` (returning value and gradient) over ``lower ≤ x ≤ upper`` by L-BFGS-B.

    Same options, iterates and result as ``scipy.optimize.minimize(fun, x0, jac=True,
    method="L-BFGS-B", bounds=Bounds(lower, upper), callback=callback, options=...)``:
    ``lower``/``upper`` are scalars or arrays (±inf for no bound); ``callback(intermediate_result)``
    is called at every iterate and ends the run by raising ``StopIteration``.

    Parameters
    ----------
    direct : bool or None, default=None
        Drive the compiled routine directly (``True``), or call ``minimize`` (``False``); ``None``
        drives it directly when :func:`direct_available`.

    Returns
    -------
    OptimizeResult
        ``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``status`` (0 converged, 1 a cap reached,
        99 stopped by the callback, 2 otherwise), ``success`` and ``message``, as ``minimize``
        gives them. With a variable fixed by equal bounds, ``minimize`` is called (it removes
        such variables before L-BFGS-B).
    """
    x0 = np.asarray(x0, dtype=np.float64).reshape(-1)
    n = len(x0)
    lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), (n,))
    upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), (n,))
    options = {"maxiter": maxiter, "maxfun": maxfun, "maxls": maxls, "maxcor": maxcor,
               "gtol": gtol, "ftol": ftol}
    if np.any(lower > upper):  # one message whichever path runs
        raise ValueError("L-BFGS-B: a lower bound is greater than its upper bound")
    if direct is None:
        direct = direct_available()
    if not direct or np.any(lower == upper):  # minimize removes fixed variables first
        return minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=Bounds(lower, upper),
                        callback=callback, options=options)
    return _drive(fun, np.clip(x0, lower, upper), lower, upper, callback=callback, **options)


def _bound_codes(lower, upper):
    """L-BFGS-B's ``nbd``: 0 unbounded, 1 lower only, 2 both, 3 upper only, with finite bounds
    in ``l``/``u`` (zero where there is none), as scipy builds them."""
    has_lower, has_upper = np.isfinite(lower), np.isfinite(upper)
    nbd = np.where(has_lower, np.where(has_upper, 2, 1), np.where(has_upper, 3, 0))
    return (np.where(has_lower, lower, 0.0), np.where(has_upper, upper, 0.0),
            nbd.astype(np.int32))


def _drive(fun, x0, lower, upper, *, callback, maxiter, maxfun, maxls, maxcor, gtol, ftol):
    """scipy's reverse-communication loop around ``setulb`` (scipy 1.15–1.17), with the value and
    gradient cached at the last evaluated point as ``minimize``'s ScalarFunction caches them."""
    if not maxls > 0:
        raise ValueError("maxls must be positive.")
    n, m = len(x0), maxcor
    low, up, nbd = _bound_codes(lower, upper)
    x = np.array(x0, dtype=np.float64)
    cache = {"x": x.copy(), "nfev": 1}
    cache["f"], cache["g"] = _value_and_gradient(fun, x)
    f, g = np.array(0.0), np.zeros(n)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m)
    iwa = np.zeros(3 * n, dtype=np.int32)
    task, ln_task = np.zeros(2, dtype=np.int32), np.zeros(2, dtype=np.int32)
    lsave, isave = np.zeros(4, dtype=np.int32), np.zeros(44, dtype=np.int32)
    dsave = np.zeros(29)
    factr = ftol / np.finfo(float).eps
    nit, halted = 0, False
    while True:
        g = g.astype(np.float64)
        _lbfgsb.setulb(m, x, low, up, nbd, f, g, factr, gtol, wa, iwa, task, lsave, isave, dsave,
                       maxls, ln_task)
        if task[0] == 3:  # the routine asks for f and g at x
            if not np.array_equal(x, cache["x"]):
                cache["x"] = x.copy()
                cache["f"], cache["g"] = _value_and_gradient(fun, x)
                cache["nfev"] += 1
            f, g = cache["f"], cache["g"]
        elif task[0] == 1:  # a new iterate
            nit += 1
            if callback is not None and _halts(callback, OptimizeResult(x=x, fun=f)):
                task[0], task[1], halted = 5, 505, True
            if nit >= maxiter:
                task[0], task[1] = 5, 504
            elif cache["nfev"] > maxfun:
                task[0], task[1] = 5, 502
        else:
            break
    status = 0 if task[0] == 4 else 1 if (cache["nfev"] > maxfun or nit >= maxiter) else 2
    message = status_messages[task[0]] + ": " + task_messages[task[1]]
    if halted:  # as minimize reports a callback's StopIteration
        status, message = 99, "`callback` raised `StopIteration`."
    return OptimizeResult(fun=f, jac=g, nfev=cache["nfev"], njev=cache["nfev"], nit=nit,
                          status=status, message=message, x=x, success=status == 0)


def _value_and_gradient(fun, x):
    """``fun`` at a copy of ``x``, as ``(float, float64 array)`` (ScalarFunction's conversions)."""
    value, grad = fun(np.copy(x))
    return float(np.asarray(value).item()), np.atleast_1d(np.asarray(grad, dtype=np.float64))


def _halts(callback, intermediate_result) -> bool:
    try:
        callback(intermediate_result)
    except StopIteration:
        return True
    return False
