"""A stand-in for pynvml, so reference nvml_trace.py can record a real trace.csv without a GPU
(used once by scripts/golden/analyze.sh to write tests/analyze/nvml_trace_recorded.csv).
The GPU is idle, then busy for 0.5 s, then idle; power readings refresh every 50 ms, as NVML's
do, so consecutive 10 ms samples repeat."""
import time

NVML_CLOCK_SM = 1
NVML_TEMPERATURE_GPU = 0
_T0 = time.monotonic()


class _Util:
    def __init__(self, gpu, memory):
        self.gpu = gpu
        self.memory = memory


def nvmlInit():
    pass


def nvmlDeviceGetHandleByIndex(i):
    return i


def _busy():
    return 0.4 <= time.monotonic() - _T0 < 0.9


def nvmlDeviceGetPowerUsage(h):
    step = int((time.monotonic() - _T0) / 0.05)
    return (350_000 if _busy() else 70_000) + (step % 7) * 1_125


def nvmlDeviceGetUtilizationRates(h):
    return _Util(98 if _busy() else 0, 40 if _busy() else 1)


def nvmlDeviceGetClockInfo(h, kind):
    return 1980 if _busy() else 345


def nvmlDeviceGetTemperature(h, kind):
    return 55
