# SPDX-License-Identifier: Apache-2.0
# Written by `flinch-trace record --torch-profile` into a private folder first on PYTHONPATH
# (docs/torch-profile.md): arms the profiler, then runs the sitecustomize this file shadows, so a
# site's or a virtual environment's own sitecustomize still runs, once, as the module `sitecustomize`.
import os as _os
import sys as _sys


def _flinch_chain():
    here = _os.path.dirname(_os.path.abspath(__file__))
    try:
        import _flinch_torch_profile

        _flinch_torch_profile.install_from_env()
    except Exception:  # never the program's problem
        pass
    import importlib.machinery
    import importlib.util

    rest = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    _sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_flinch_chain()
del _flinch_chain
