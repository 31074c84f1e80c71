# SPDX-License-Identifier: Apache-2.0
"""torch.profiler for a program that does not call it: started on the first optimizer step, stepped
by every later one, its Kineto trace written atomically beside the recording (docs/torch-profile.md).

Two users, one file: ``flinch-trace record --torch-profile`` writes this module (embedded in the
binary) into a private folder put first on ``PYTHONPATH``, beside a ``sitecustomize`` that calls
``install_from_env()`` and then runs the ``sitecustomize`` it shadows; ``flinch_trace.profile()``
imports it and calls ``install()``.

- No polling: a one-shot ``sys.meta_path`` finder wraps the ``torch`` package's loader, so the hook
  is registered the moment ``import torch`` finishes (at once when torch is already imported).
- The profiler starts on the first step of the first optimizer seen (so nothing runs before
  training and CUDA is asked about only after the program used it) and steps on that optimizer's
  later steps (a second optimizer, as in a GAN, would count each iteration twice).
- CPU activities, plus CUDA when ``torch.cuda.is_available()``, with torch 2.15's environment
  counters (``CuspyConfig(enable_environment_counters=True)``) when this torch has them; any failure
  there falls back to plain CUDA, then to CPU alone, without a word to the program.
- Each finished active window is exported to a dot-named temporary file in the same folder and
  renamed into place, so a trace file is whole or absent. ``atexit`` stops a profiler still
  recording (an early end, a KeyboardInterrupt) and exports what it holds; SIGTERM left at its
  default becomes ``SystemExit(143)`` while the profiler lives, so atexit runs then too.
- Nothing here may break the program: every error is caught, noted in the state folder, and
  turns the profiler off.

State notes, one file per process (``py-<pid>``) in ``$FLINCH_TORCH_PROFILE_STATE``, one word a
line: ``python``, ``torch``, ``profiler <activities>``, ``trace <path>``, ``error <text>``.
``record`` reads them after the command to say what happened.
"""

import atexit
import os
import sys

#: Environment set by ``record --torch-profile``.
ENV_PREFIX = "FLINCH_TORCH_PROFILE_PREFIX"
ENV_SCHEDULE = "FLINCH_TORCH_PROFILE_SCHEDULE"
ENV_STATE = "FLINCH_TORCH_PROFILE_STATE"

#: wait, warmup, active, repeat: as ``record --torch-profile``'s default.
DEFAULT_SCHEDULE = (5, 2, 10, 1)

_session = None


class _Session:
    """One process's profiler: its options, and the profiler once the first step started it."""

    def __init__(self, prefix, schedule, state_dir):
        self.prefix = prefix
        self.schedule = schedule
        self.state_dir = state_dir
        self.prof = None
        self.optimizer = None
        self.handle = None
        self.cycles = 0
        self.off = False
        self.traces = []
        self.stopped = False
        self.pid = os.getpid()

    def note(self, line):
        if not self.state_dir:
            return
        try:
            with open(os.path.join(self.state_dir, "py-%d" % os.getpid()), "a") as f:
                f.write(line.replace("\n", " ") + "\n")
        except OSError:
            pass

    def fail(self, what, e):
        self.off = True
        self.note("error %s: %s: %s" % (what, type(e).__name__, e))

    # The import hook's end: torch is whole.
    def on_torch(self, torch):
        if self.off or self.handle is not None:
            return
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook

            self.handle = register_optimizer_step_post_hook(self.after_step)
            self.note("torch")
        except Exception as e:  # an old torch: no global step hooks
            self.fail("hook", e)

    def after_step(self, optimizer, args, kwargs):
        if self.off:
            return
        try:
            if self.prof is None:
                self.optimizer = optimizer
                self.start()
            elif optimizer is self.optimizer and not self.stopped:
                self.prof.step()
        except Exception as e:
            self.fail("step", e)

    def start(self):
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule

        wait, warmup, active, repeat = self.schedule
        sched = schedule(wait=wait, warmup=warmup, active=active, repeat=repeat)
        cpu = [ProfilerActivity.CPU]
        tries = [(cpu, "cpu")]
        if torch.cuda.is_available():
            tries.insert(0, (cpu + [ProfilerActivity.CUDA], "cpu,cuda"))
            counters = _counters_activity(torch)
            if counters is not None:
                tries.insert(0, (cpu + [counters], "cpu,cuda,counters"))
        last = None
        for activities, name in tries:
            try:
                prof = profile(activities=activities, schedule=sched, on_trace_ready=self.save)
                prof.start()
            except Exception as e:  # this torch or this machine cannot: the next, plainer one
                last = e
                continue
            self.prof = prof
            self.note("profiler " + name)
            _exit_on_sigterm()
            return
        raise last

    def save(self, prof):
        self.cycles += 1
        path = trace_path(self.prefix, os.environ.get("RANK"), self.cycles, self.schedule[3])
        folder, base = os.path.split(path)
        tmp = os.path.join(folder, ".%s.tmp%d.json.gz" % (base, os.getpid()))
        try:
            prof.export_chrome_trace(tmp)
            os.replace(tmp, path)
        except Exception as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            self.fail("export", e)
            return
        self.traces.append(path)
        self.note("trace " + path)

    def stop(self):
        """Ends the profiler (exporting a window still recording) and the hook; idempotent."""
        if self.stopped or os.getpid() != self.pid:
            return  # done, or a forked child (a DataLoader worker) that inherited the atexit hook
        self.stopped = True
        try:
            if self.prof is not None:
                self.prof.stop()
        except Exception as e:
            self.fail("stop", e)
        if self.handle is not None:
            self.handle.remove()


def trace_path(prefix, rank, cycle, repeat):
    """``PREFIX.torch[.rankR][.cycleK].json.gz``: the rank when ``RANK`` is set, the cycle when the
    schedule repeats (repeat 0 or more than 1)."""
    name = prefix + ".torch"
    if rank not in (None, ""):
        name += ".rank" + rank
    if repeat != 1:
        name += ".cycle%d" % cycle
    return name + ".json.gz"


def _counters_activity(torch):
    """The CUDA activity with torch 2.15's environment counters, or None where this torch has none."""
    p = getattr(torch.profiler, "profiler", None)
    config = getattr(p, "ProfilerActivityConfig", None)
    cuspy = getattr(p, "CuspyConfig", None)
    if config is None or cuspy is None:
        return None
    try:
        return {
            torch.profiler.ProfilerActivity.CUDA: config(
                profiler_configs=[cuspy(enable_environment_counters=True)]
            )
        }
    except Exception:
        return None


def _exit_on_sigterm():
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(128 + sig))


class _TorchFinder:
    """Finds ``torch`` through the other finders and wraps its loader, so the session sees torch
    as soon as its import finishes. One-shot: it leaves ``sys.meta_path`` on first use."""

    def __init__(self, session):
        self.session = session

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec
        session = self.session

        def exec_then_hook(module):
            exec_module(module)
            session.on_torch(module)

        try:
            loader.exec_module = exec_then_hook
        except Exception as e:
            session.fail("import hook", e)
        return spec


def install(prefix, schedule=DEFAULT_SCHEDULE, state_dir=None):
    """Arms the profiler for this process: traces go to ``PREFIX.torch….json.gz``."""
    global _session
    if _session is not None:
        return _session
    _session = s = _Session(prefix, tuple(schedule), state_dir)
    s.note("python")
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "optim", None) is not None:
        s.on_torch(torch)
    else:
        sys.meta_path.insert(0, _TorchFinder(s))
    atexit.register(s.stop)
    return s


def uninstall():
    """Stops this process's profiler (exporting what it recorded) and returns the trace paths."""
    global _session
    s, _session = _session, None
    if s is None:
        return []
    s.stop()
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _TorchFinder)]
    return list(s.traces)


def install_from_env():
    """``sitecustomize``'s entry: arms the profiler when ``record --torch-profile`` set the variables."""
    prefix = os.environ.get(ENV_PREFIX)
    if not prefix:
        return
    try:
        schedule = tuple(int(v) for v in os.environ.get(ENV_SCHEDULE, "").split(","))
        if len(schedule) != 4:
            schedule = DEFAULT_SCHEDULE
    except ValueError:
        schedule = DEFAULT_SCHEDULE
    install(prefix, schedule, os.environ.get(ENV_STATE))
