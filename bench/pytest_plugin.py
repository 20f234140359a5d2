"""What the netsleuth pytest plugin costs a test suite that does not use it.

netsleuth registers its plugin with pytest (entry point ``pytest11``), so
every pytest run in an environment with netsleuth installed loads it. It
must stay cheap until a test asks for a network. The script measures, in
one run and alternating the variants so the machine's load hits both alike:

* ``import_ms``: importing ``netsleuth.pytest_plugin`` in a fresh interpreter
  that has already imported pytest (what loading the plugin adds), beside
  ``import_netsleuth_testing_ms``, importing what the plugin defers
  (``netsleuth.testing.network``: the runtime, controllers, invariants);
* ``with_ms`` / ``without_ms``: wall time of ``python -m pytest`` on a file
  with one trivial test, with the plugin and with ``-p no:netsleuth``;
  ``overhead_ms`` is their difference and ``ratio`` with/without;
* ``pytest_imported_modules``: the netsleuth modules such a pytest run has
  imported (the plugin and the package's ``__init__``, nothing else).

Wall times are reported as the median and the minimum of ``--repeat`` runs,
and so is the CPU time (user + system) of the pytest process: on a loaded
machine the wall times of two runs differ by far more than 50 ms whatever
they load, while the CPU time a run spends changes much less with the load,
so the goal -- an overhead under 50 ms -- is judged on the median CPU times
(and on the plugin's own import time). Prints a table and writes ``bench/results/pytest_plugin.json``.

    .venv/bin/python bench/pytest_plugin.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "pytest_plugin.json"
GOAL_MS = 50.0

TIME_IMPORT = """
import time, pytest
t0 = time.perf_counter()
import {module}
print((time.perf_counter() - t0) * 1000)
"""


def import_ms(module: str) -> float:
    out = subprocess.run([sys.executable, "-c", TIME_IMPORT.format(module=module)], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return float(out.stdout.strip())


def pytest_ms(folder: Path, *extra: str) -> tuple[float, float]:
    """Wall time and CPU time (user + system, of the pytest process) of one run, in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "test_trivial.py"],
                       cwd=folder, capture_output=True, text=True)
    elapsed = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"pytest failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return elapsed, cpu


def netsleuth_modules(folder: Path) -> list[str]:
    """The netsleuth modules a pytest run of a test that does not use netsleuth has imported."""
    (folder / "test_modules.py").write_text(
        "import json, sys\n"
        "def test_modules():\n"
        "    names = sorted(m for m in sys.modules if m.split('.')[0] == 'netsleuth')\n"
        "    open('modules.json', 'w').write(json.dumps(names))\n")
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_modules.py"],
                   cwd=folder, capture_output=True, text=True, check=True)
    names: list[str] = json.loads((folder / "modules.json").read_text())
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=15, help="runs of each variant (median reported)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    plugin, testing = [], []
    with_: list[float] = []
    without: list[float] = []
    with_cpu: list[float] = []
    without_cpu: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "test_trivial.py").write_text("def test_trivial():\n    assert 1 + 1 == 2\n")
        loaded = subprocess.run([sys.executable, "-m", "pytest", "--trace-config", "-q", "--co", "test_trivial.py"],
                                cwd=folder, capture_output=True, text=True).stdout
        if "netsleuth.pytest_plugin" not in loaded:
            sys.exit("the plugin is not registered: reinstall netsleuth (pip install -e .) for its entry point")
        pytest_ms(folder)  # warm the file system cache for both variants
        for _ in range(args.repeat):
            plugin.append(import_ms("netsleuth.pytest_plugin"))
            testing.append(import_ms("netsleuth.testing.network"))
            for wall, cpu, extra in ((with_, with_cpu, ()), (without, without_cpu, ("-p", "no:netsleuth"))):
                w, c = pytest_ms(folder, *extra)
                wall.append(w)
                cpu.append(c)
        modules = netsleuth_modules(folder)
    med = statistics.median
    data = {
        "repeat": args.repeat, "python": platform.python_version(),
        "pytest": subprocess.run([sys.executable, "-c", "import pytest; print(pytest.__version__)"],
                                 capture_output=True, text=True).stdout.strip(),
        "import_ms": round(med(plugin), 2), "import_netsleuth_testing_ms": round(med(testing), 1),
        "with_ms": round(med(with_), 1), "without_ms": round(med(without), 1),
        "overhead_ms": round(med(with_) - med(without), 1), "ratio": round(med(with_) / med(without), 3),
        "with_min_ms": round(min(with_), 1), "without_min_ms": round(min(without), 1),
        "overhead_min_ms": round(min(with_) - min(without), 1), "ratio_min": round(min(with_) / min(without), 3),
        "with_cpu_ms": round(med(with_cpu), 1), "without_cpu_ms": round(med(without_cpu), 1),
        "overhead_cpu_ms": round(med(with_cpu) - med(without_cpu), 1),
        "ratio_cpu": round(med(with_cpu) / med(without_cpu), 3),
        "pytest_imported_modules": modules,
        "goal_ms": GOAL_MS,
    }
    data["within_goal"] = data["overhead_cpu_ms"] < GOAL_MS and data["import_ms"] < GOAL_MS
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    rows = [("import netsleuth.pytest_plugin", f"{data['import_ms']} ms"),
            ("import netsleuth.testing.network (deferred)", f"{data['import_netsleuth_testing_ms']} ms"),
            ("pytest, trivial test, plugin loaded", f"{data['with_ms']} ms"),
            ("pytest, trivial test, -p no:netsleuth", f"{data['without_ms']} ms"),
            ("overhead of medians", f"{data['overhead_ms']} ms (ratio {data['ratio']})"),
            ("pytest, minimum with / without", f"{data['with_min_ms']} / {data['without_min_ms']} ms"),
            ("overhead of minima", f"{data['overhead_min_ms']} ms (ratio {data['ratio_min']})"),
            ("pytest CPU time, median with / without", f"{data['with_cpu_ms']} / {data['without_cpu_ms']} ms"),
            ("overhead in CPU time (goal < 50 ms)", f"{data['overhead_cpu_ms']} ms (ratio {data['ratio_cpu']})"),
            ("netsleuth modules a plain test run imports", ", ".join(data["pytest_imported_modules"]))]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(f"wrote {RESULTS}")
    return 0 if data["within_goal"] else 1


if __name__ == "__main__":
    sys.exit(main())
