# SPDX-License-Identifier: Apache-2.0
"""Unit tests of the bootstrap (python/flinch_trace/_torch_profile.py) without PyTorch: the trace names, and
the import hook on a stand-in `torch` package (registered the moment `import torch` finishes, once, and
not at all when the import fails). Run: python -m pytest tests/torch/test_torch_profile.py"""
import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
BOOTSTRAP = os.path.join(HERE, "..", "..", "python", "flinch_trace")


def test_trace_names_carry_the_rank_and_the_cycle_only_when_needed():
    sys.path.insert(0, BOOTSTRAP)
    try:
        import _torch_profile as tp
    finally:
        sys.path.pop(0)
    assert tp.trace_path("/r/trace", None, 1, 1) == "/r/trace.torch.json.gz"
    assert tp.trace_path("/r/trace", "", 1, 1) == "/r/trace.torch.json.gz"
    assert tp.trace_path("/r/trace", "3", 1, 1) == "/r/trace.torch.rank3.json.gz"
    assert tp.trace_path("/r/trace", "3", 2, 0) == "/r/trace.torch.rank3.cycle2.json.gz"
    assert tp.trace_path("/r/t", None, 1, 4) == "/r/t.torch.cycle1.json.gz"


def run_with_fake_torch(tmp_path, program, broken=False):
    pkg = tmp_path / "torch"
    (pkg / "optim").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from . import optim\n" + ("raise ImportError('broken torch')\n" if broken else "")
    )
    (pkg / "optim" / "__init__.py").write_text("from . import optimizer\n")
    (pkg / "optim" / "optimizer.py").write_text(textwrap.dedent("""
        hooks = []
        class Handle:
            def remove(self):
                hooks.clear()
        def register_optimizer_step_post_hook(h):
            hooks.append(h)
            return Handle()
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([BOOTSTRAP, str(tmp_path)]))
    return subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True)


PROLOGUE = textwrap.dedent("""
    import sys, _torch_profile as tp
    s = tp.install("/nonexistent/trace", (1, 1, 2, 1), None)
    assert "torch" not in sys.modules
""")


def test_the_hook_is_registered_when_import_torch_finishes_and_the_finder_leaves(tmp_path):
    program = PROLOGUE + textwrap.dedent("""
        import torch.optim.optimizer as o
        assert o.hooks == [s.after_step], o.hooks
        assert not any(isinstance(f, tp._TorchFinder) for f in sys.meta_path)
        assert tp.install("/elsewhere", (0, 0, 1, 1)) is s
        assert tp.uninstall() == [] and o.hooks == [], o.hooks  # the hook removed
        print("ok")
    """)
    r = run_with_fake_torch(tmp_path, program)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_a_failing_import_of_torch_leaves_the_program_alone(tmp_path):
    program = PROLOGUE + textwrap.dedent("""
        try:
            import torch
        except ImportError as e:
            assert str(e) == "broken torch", e
        assert s.handle is None and not s.off
        print("ok")
    """)
    r = run_with_fake_torch(tmp_path, program, broken=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_torch_already_imported_is_hooked_at_once(tmp_path):
    program = textwrap.dedent("""
        import sys
        import torch.optim.optimizer as o
        import _torch_profile as tp
        s = tp.install("/nonexistent/trace")
        assert o.hooks == [s.after_step]
        print("ok")
    """)
    r = run_with_fake_torch(tmp_path, program)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
