"""Studies on a Ray cluster: ``--ray ADDRESS`` (an existing cluster, e.g. ``ray://host:10001``
or ``auto``) or ``--ray local`` (starts a local Ray instance with the machine's CPUs).

Ray's task API, not Ray Tune: a study's cells are independent fits whose dev-set selection
happens afterwards over *all* cells (``select`` in each study module), exactly as with the
other executors, so results and resumption do not depend on the engine; Tune's trial
scheduling and early stopping would change what is computed. Each cell is one task
(``num_cpus=1``); the study context (the specification from which a worker loads its data)
is put in the object store once and passed by reference, and workers cache the loaded data
per process (the loaders' caches), so data reaches a worker once, not once per cell. A task
whose worker dies (killed, out of memory) is reported as a failed cell with Ray's error, the
others complete, and rerunning the study command retries only the failed cells.
"""

from __future__ import annotations

import os
import traceback

from .executors import Executor, _call
from .registry import PLUGINS_ENV

EXTRA_HINT = "--ray needs Ray: pip install 'lvgp[ray]'"


class RayStartupError(RuntimeError):
    """A local Ray instance did not start: Ray gives its processes a fixed 30 s to register, which
    a busy machine can miss (``The current node timed out during startup``); :func:`start_local_ray`
    retried before raising it."""


def start_local_ray(num_cpus: int | None, runtime_env: dict, attempts: int = 3) -> None:
    """``ray.init`` of a local instance, retried ``attempts`` times (a shutdown and a pause between)
    when it times out starting: Ray waits a fixed 30 s for its processes to register, which a machine
    under load (a test suite on two busy cores) misses now and then. Raises
    :class:`RayStartupError` after the last attempt."""
    import time

    import ray

    # Ray nices its workers by default; a local study should get a fair share of the
    # machine (measured: importing torch took 4 minutes in a niced worker beside busy processes)
    os.environ.setdefault("RAY_worker_niceness", "0")
    for attempt in range(1, attempts + 1):
        try:
            ray.init(
                num_cpus=num_cpus or os.cpu_count(),
                include_dashboard=False,
                log_to_driver=False,
                runtime_env=runtime_env,
            )
            return
        except Exception as err:  # noqa: BLE001 -- Ray raises a bare Exception on a startup timeout
            if "timed out during startup" not in str(err):
                raise
            ray.shutdown()
            if attempt == attempts:
                raise RayStartupError(
                    f"a local Ray instance did not start in {attempts} attempts ({err}); the machine may be too "
                    "busy: retry later, or run the study with --jobs instead of --ray local"
                ) from err
            time.sleep(5 * attempt)


class RayExecutor(Executor):
    """Cells as Ray tasks. ``address``: ``"local"`` to start a local instance (shut down
    when the study ends), else passed to ``ray.init(address=...)``; ``num_cpus``: CPUs of a
    local instance (default: all)."""

    def __init__(self, address: str = "local", num_cpus: int | None = None, threads_per_cell: int = 1):
        try:
            import ray  # noqa: F401
        except ImportError as err:
            raise ImportError(EXTRA_HINT) from err
        self.address, self.num_cpus, self.threads_per_cell = address, num_cpus, threads_per_cell

    def _connect(self):
        import ray

        if ray.is_initialized():
            return ray, False
        env = {"env_vars": {"OMP_NUM_THREADS": str(self.threads_per_cell)}}
        if os.environ.get(PLUGINS_ENV):  # --plugin: the workers import the same modules (which they must find)
            env["env_vars"][PLUGINS_ENV] = os.environ[PLUGINS_ENV]
        if self.address == "local":
            start_local_ray(self.num_cpus, env)
            return ray, True
        ray.init(address=self.address, log_to_driver=False, runtime_env=env)
        return ray, True

    def run(self, fn, context, cells):
        ray, started = self._connect()
        try:
            task = ray.remote(num_cpus=1, max_retries=0)(_call)
            context_ref = ray.put(context)  # once, in the object store
            refs = {task.remote(fn, context_ref, cell): cell for cell in cells}
            pending = list(refs)
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    cell = refs[ref]
                    try:
                        result, error = ray.get(ref)
                    except Exception:  # noqa: BLE001 - the worker died or Ray failed the task
                        result, error = None, traceback.format_exc()
                    yield cell, result, error
        finally:
            if started:
                ray.shutdown()
