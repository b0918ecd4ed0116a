"""Large N (issue 41, 2): one epoch of the sparse GP-LVSM and of the variational GP classifier over
documents of an LDA generator with Zipf word frequencies, time and memory against n.

The corpus: :func:`lvgp.datasets.make_zipf_topic_documents` (V = 50,000 words, 50 topics, lengths
log-normal as the ``amazon-reviews`` corpus's, capped at 512 tokens; the regression target linear
in the topic shares, the class the largest of 4 topic groups) -- no registry corpus of a million
documents was found with the licence care of the data sets. Each estimator is fitted for exactly
one epoch (``max_epochs=1``) with its default kernel, ``--inducing`` inducing documents and batches
of ``--batch``, in a fresh process per (estimator, n, code) so that peak memory is per run.

Printed per row: seconds for the epoch (the fit, inducing selection included), microseconds per
document, Adam steps, the milliseconds of one step (the median over the epoch of the time between
the ends of two Adam steps, the GPU synchronized; the first 5 steps left out), the seconds before the
first step (setup: the inducing documents, the kernel's start, the data to the device), the process's peak resident memory and that less the corpus's own arrays
(flat in n when the model's memory does not grow with n), and the operations a step dispatches:
``torch.profiler`` over steps 4-6 of a fit on the first 8,000 documents (the setup left out) -- on a GPU the CUDA kernels launched (and the fraction of a step's wall time they run,
the GPU busy fraction: their time over the step's), on CPU the leaf ATen operators (each would be a launch on a GPU),
and the operators whose result the host reads before going on (``item()``, ``equal``, data-dependent sizes of ``nonzero``
and ``unique``: on a GPU each waits for the queue to drain). With
``--before COMMIT`` the same rows for the code at that commit, measured in the same run.

The peer (``--models svgp-dense``): gpytorch's own SVGP (RBF, learned inducing points, the same
m, batch and device, float64) on ``--features``-dimensional dense features (384: the sentence
encoder's width); with it in the run, each LDK model's step is printed as a multiple of its step.

    python benchmarks/large_n.py --docs 50000 --threads 2 [--before c43fba1]
    python benchmarks/large_n.py --docs 1000000 --device cuda          # the GPU goal: under 60 s
    python benchmarks/large_n.py --docs 50000 --device cuda --models sparse-gplvsm,svgp-dense
    python benchmarks/large_n.py --docs 8000 --max-steps 8 --one-block  # on a CPU, the operators of a GPU's step
    python benchmarks/large_n.py --quick                                # small, for the tests
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _before import ROOT, extract, run_code
from _threads import add_threads_option, resolve_threads

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np, torch
args = json.loads(sys.argv[1])
torch.set_num_threads(args["threads"])
from threadpoolctl import threadpool_limits
threadpool_limits(args["threads"])
from lvgp import LDKGPClassifier, SparseGPLVSMRegressor
if args["one_block"]:  # the Nystrom columns pooled in one block, as off the CPU (issue 60)
    import lvgp.kernels.embedding
    lvgp.kernels.embedding._POOLED_BLOCK = 2**62
import importlib.util  # the generator of today's tree, whichever code is measured
spec = importlib.util.spec_from_file_location("zipf_documents", args["generator"])
generator = importlib.util.module_from_spec(spec)
sys.modules["zipf_documents"] = generator  # dataclasses look their module up
spec.loader.exec_module(generator)
warnings.simplefilter("ignore")
import os
try:  # today's estimators take their mini-batch settings as one object
    from lvgp import MiniBatch
    def mini_batch(**fields):
        return {"optimizer": MiniBatch(**fields)}
except ImportError:  # the code before lvgp.MiniBatch (--before) took them as arguments
    def mini_batch(**fields):
        return fields
data = generator.make_zipf_topic_documents(args["n"], num_words=args["num_words"], max_length=args["max_length"], random_state=0, n_jobs=os.cpu_count() or 1)
if args["model"] == "svgp-dense":  # the peer: dense features of the encoder's width in place of the documents
    X = torch.randn(args["n"], args["features"], dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    data_mib = X.numel() * X.element_size() / 2**20
else:
    # the generator's int32 ids as they are: the estimators keep such a corpus without an int64 copy
    # (code before that change made the copy itself, and it counts above the data)
    X = torch.from_numpy(data.X)
    data_mib = data.X.nbytes / 2**20

class DenseSVGP:
    # gpytorch's SVGP (learned inducing points, Cholesky q(u), whitened) with ScaleKernel(RBF) on
    # dense features, trained as SparseGPLVSMRegressor trains (Adam, batches of a permutation), float64

    def __init__(self, max_epochs=None, max_steps=None):
        self.max_epochs, self.max_steps = max_epochs or 10**9, max_steps or 10**9

    def fit(self, x, y):
        import gpytorch
        device = torch.device(args["device"])
        g = torch.Generator().manual_seed(0)
        z = x[torch.randperm(len(x), generator=g)[: args["inducing"]]].clone()

        class Model(gpytorch.models.ApproximateGP):
            def __init__(self):
                dist = gpytorch.variational.CholeskyVariationalDistribution(len(z), dtype=torch.float64)
                super().__init__(gpytorch.variational.VariationalStrategy(self, z, dist, learn_inducing_locations=True))
                self.mean_module = gpytorch.means.ConstantMean()
                self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

            def forward(self, t):
                return gpytorch.distributions.MultivariateNormal(self.mean_module(t), self.covar_module(t))

        model = Model().double().to(device)
        likelihood = gpytorch.likelihoods.GaussianLikelihood().double().to(device)
        mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=len(x))
        opt = torch.optim.Adam([*model.parameters(), *likelihood.parameters()], lr=0.02)
        x, y = x.to(device), torch.as_tensor(y, dtype=torch.float64).to(device)
        model.train(); likelihood.train()
        self.n_iter_ = 0
        for _ in range(self.max_epochs):
            perm = torch.randperm(len(x), generator=g).to(device)
            for b in range(0, len(x), args["batch"]):
                if self.n_iter_ >= self.max_steps:
                    return self
                rows = perm[b : b + args["batch"]]
                opt.zero_grad()
                loss = -mll(model(x[rows]), y[rows])
                loss.backward()
                opt.step()
                self.n_iter_ += 1
        return self

def estimator(max_epochs=None, max_steps=None):
    common = dict(num_inducing=args["inducing"], num_words=data.num_words, random_state=0, device=args["device"])
    if args["kernel"] != "default":  # the default spec with the approximation named (not its "auto" rule)
        from lvgp.kernels import LDKSpec
        cls = SparseGPLVSMRegressor if args["model"] == "sparse-gplvsm" else LDKGPClassifier
        common["kernel"] = LDKSpec(**cls._default_kernel).replace(approximation=args["kernel"])
    if args["model"] == "svgp-dense":
        return DenseSVGP(max_epochs, max_steps)
    compiled = {"compile": True} if args["compile"] else {}  # rbf_pooled's blocks from torch.compile (issue 60)
    if args["model"] == "sparse-gplvsm":
        return SparseGPLVSMRegressor(
            **mini_batch(batch_size=args["batch"], max_steps=max_steps or 10**9, max_epochs=max_epochs, **compiled), **common
        )
    return LDKGPClassifier(
        inference="variational", **mini_batch(batch_size=args["batch"], max_epochs=max_epochs or 10**9, **compiled), **common
    )

def fit(model, n):
    target = data.labels if args["model"] == "variational-gpc" else data.y
    return model.fit(X[:n], target[:n])

# each step's end, read when Adam's step returns (the GPU synchronized): every model takes one Adam step a step
from torch.optim.optimizer import register_optimizer_step_post_hook
ends, profiling, profiled_ends = [], [], []

def step_ended(optimizer, *_):
    if type(optimizer).__name__ != "Adam":
        return
    if args["device"] != "cpu":
        torch.cuda.synchronize()
    if profiling:  # a profiled fit: the profiler's schedule advances
        profiled_ends.append(time.perf_counter())
        profiling[0].step()
    else:
        ends.append(time.perf_counter())

hook = register_optimizer_step_post_hook(step_ended)
start = time.perf_counter()
model = fit(estimator(max_epochs=1, max_steps=args["max_steps"]), args["n"])
if args["device"] != "cpu":
    torch.cuda.synchronize()
seconds = time.perf_counter() - start
step_seconds = float(np.median(np.diff(ends[min(5, len(ends) - 2):])))  # after a few warm-up steps
setup = ends[0] - start - step_seconds  # reading the data, inducing documents, the kernel's start
steps = -(-args["n"] // args["batch"]) if args["model"] == "variational-gpc" else model.n_iter_
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

from torch.profiler import ProfilerActivity, profile
from torch.autograd import DeviceType

def dispatched(waiting=2, active=3):
    # torch.profiler over `active` steps of a fit, after `waiting` steps and one of warm-up (its schedule
    # advanced by Adam's step hook): the operations of steps alone, per step
    n, steps = min(args["n"], 8000), waiting + 1 + active + 1
    if args["model"] != "variational-gpc":
        m = estimator(max_steps=steps)
    else:  # one epoch of `steps` batches
        m, n = estimator(max_epochs=1), steps * args["batch"]
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args["device"] != "cpu" else [])
    captured = []
    schedule = torch.profiler.schedule(wait=waiting, warmup=1, active=active, repeat=1)
    with profile(activities=activities, schedule=schedule, on_trace_ready=lambda p: captured.append(list(p.events()))) as prof:
        profiling.append(prof)
        fit(m, n)
        profiling.clear()
    events = captured[0]
    reads = host_reads(events) / active
    if args["device"] != "cpu":  # the kernels' time over the wall time of the profiled steps themselves
        # device events named as host ranges are annotations projected on the GPU's timeline (each
        # "ProfilerStep#k" spans its step's kernels), not kernels: counted, they put the busy fraction
        # of the 2026-11-27 run at 128-169%
        ranges = {e.name for e in events if e.device_type == DeviceType.CPU}
        kernels = [e for e in events if e.device_type == DeviceType.CUDA and e.name not in ranges]
        wall = profiled_ends[waiting + active] - profiled_ends[waiting]  # steps waiting+1 .. waiting+active
        return len(kernels) / active, sum(e.device_time_total for e in kernels) / 1e6 / wall, reads
    return sum(1 for e in events if e.name.startswith("aten::") and not e.cpu_children) / active, 0.0, reads

# operators whose result the host must read before it can go on (a value -- `equal` and `is_nonzero`
# included, counted since 2026-12-01 -- or a size that depends on the data): on a GPU each waits for
# every kernel queued before it
HOST_READS = {"aten::_local_scalar_dense", "aten::nonzero", "aten::_unique2", "aten::unique_dim",
              "aten::unique_consecutive", "aten::masked_select", "aten::equal", "aten::is_nonzero"}

def host_reads(events):
    return sum(1 for e in events if e.name in HOST_READS)

ops_per_step, busy, reads_per_step = dispatched() if args["profile"] else (None, None, None)
busy = busy if args["device"] != "cpu" else None
print(json.dumps({"seconds": seconds, "steps": steps, "peak_mib": peak, "data_mib": data_mib,
                  "ops_per_step": ops_per_step, "gpu_busy": busy, "host_reads": reads_per_step, "step_seconds": step_seconds,
                  "setup_seconds": setup}))
"""

MODELS = ("sparse-gplvsm", "variational-gpc")
#: gpytorch's SVGP on dense features (--models svgp-dense): the peer of the LDK step (issue 41, 2)
PEER = "svgp-dense"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 documents of 2,000 words, 16 inducing (tests)")
    parser.add_argument("--docs", default="50000", help="comma-separated corpus sizes")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--inducing", type=int, default=256)
    parser.add_argument("--features", type=int, default=384, help="the dense features' width of --models svgp-dense")
    parser.add_argument("--batch", type=int, default=256)
    add_threads_option(parser, what="torch's threads")
    parser.add_argument(
        "--max-length", type=int, default=512, help="tokens a document keeps (amazon-reviews lengths up to 512)"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="cut the sparse GP-LVSM's epoch (and the dense peer's) after this many steps; the whole epoch is then "
        "extrapolated: its setup plus every step at the measured step time",
    )
    parser.add_argument(
        "--kernel",
        default="default",
        choices=("default", "nystrom", "exact"),
        help="the LDK models' kernel: the estimator's default (approximation 'auto': exact up to max_exact_words "
        "distinct training words, then Nystrom), or it with approximation='nystrom' (landmark words) or 'exact'",
    )
    parser.add_argument("--no-profile", action="store_true", help="leave the operators per step out (faster)")
    parser.add_argument(
        "--one-block",
        action="store_true",
        help="on the CPU, pool the Nystrom columns in one block, as a GPU does (rbf_pooled): the operators a step "
        "dispatches there, counted on a CPU",
    )
    parser.add_argument("--before", default="", help="also run the code at this commit (e.g. c43fba1)")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="also run today's code with MiniBatch(compile=True) (the sparse GP-LVSM and the variational classifier: "
        "their fused objectives, compiled, on a GPU; on a CPU rbf_pooled's blocks from torch.compile; the row 'now, "
        "compiled'; its warm-up is in its setup and its first steps)",
    )
    parser.add_argument(
        "--compile-only",
        action="store_true",
        help="run only today's code with MiniBatch(compile=True) (the row 'now, compiled'; gpu_all.sh's compiled part)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the codes this many times in turn and print every run (on a shared machine the first process of "
        "a run was 20-25%% slower than the same code run next: compare the later rounds)",
    )
    args = parser.parse_args(argv)
    resolve_threads(args)
    sizes = [1000] if args.quick else [int(s) for s in args.docs.split(",")]
    common = {
        "threads": args.threads,
        "device": args.device,
        "inducing": 16 if args.quick else args.inducing,
        "batch": 128 if args.quick else args.batch,
        "num_words": 2000 if args.quick else 50_000,
        "max_length": 64 if args.quick else args.max_length,
        "generator": str(ROOT / "lvgp" / "datasets" / "synthetic.py"),
        "features": args.features,
        "max_steps": args.max_steps,
        "profile": not args.no_profile,
        "kernel": args.kernel,
        "one_block": args.one_block,
        "compile": False,
    }
    device = args.device
    if device != "cpu":
        import torch

        device = torch.cuda.get_device_name(torch.device(device))
    print(
        f"device: {device}; {args.threads} thread(s); {common['inducing']} inducing documents, batches of "
        f"{common['batch']}; V = {common['num_words']:,}; documents capped at {common['max_length']} tokens"
    )
    print(
        "| model | code | n | epoch s | us / doc | steps | step ms | setup s | peak MiB | peak less data MiB | "
        "ops / step | host reads / step | GPU busy |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    step_ms: dict[tuple[str, int], float] = {}
    cut: dict[tuple[str, str, int], tuple[int, int, float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        codes = {} if args.compile_only else {"now": ROOT}
        if args.compile or args.compile_only:
            codes["now, compiled"] = ROOT
        if args.before:
            codes[args.before] = extract(args.before, Path(tmp) / "before")
        for model in args.models.split(","):
            for n in sizes:
                for code, package in [item for _ in range(max(1, args.rounds)) for item in codes.items()]:
                    try:
                        r = run_code(
                            CHILD,
                            package,
                            {**common, "model": model, "n": n, "compile": code == "now, compiled"},
                            omp_threads=str(args.threads),
                        )
                    except RuntimeError as err:  # e.g. killed by the kernel's OOM killer: say so in the table
                        last = (str(err).strip().splitlines() or ["?"])[-1][:80]
                        print(err, file=sys.stderr)
                        print(f"| {model} | {code} | {n:,} | failed: {last} | | | | | | | | | |", flush=True)
                        continue
                    busy = "-" if r["gpu_busy"] is None else f"{r['gpu_busy']:.0%}"
                    ops = "-" if r["ops_per_step"] is None else f"{r['ops_per_step']:.0f}"
                    reads = "-" if r.get("host_reads") is None else f"{r['host_reads']:.0f}"
                    if code == "now":
                        step_ms[model, n] = 1e3 * r["step_seconds"]
                    full = -(-n // common["batch"])
                    if r["steps"] < full:  # --max-steps cut the epoch
                        setup = r["setup_seconds"]
                        cut[model, code, n] = (r["steps"], full, setup, setup + full * r["step_seconds"])
                    print(
                        f"| {model} | {code} | {n:,} | {r['seconds']:.1f} | {1e6 * r['seconds'] / n:.0f} | "
                        f"{r['steps']} | {1e3 * r['step_seconds']:.1f} | {r['setup_seconds']:.1f} | {r['peak_mib']:.0f} | "
                        f"{r['peak_mib'] - r['data_mib']:.0f} | {ops} | {reads} | {busy} |",
                        flush=True,
                    )
    for (model, code, n), (steps, full, setup, whole) in cut.items():
        print(
            f"{model} ({code}) at n = {n:,}: {steps} of the epoch's {full:,} steps run; the epoch extrapolated: "
            f"{setup:.1f} s of setup + {full:,} steps = {whole:.0f} s"
        )
    for (model, n), ms in step_ms.items():  # the goal: the LDK step at most 2x the dense SVGP's
        if model != PEER and (PEER, n) in step_ms:
            print(f"{model} step / {PEER} step at n = {n:,}: {ms / step_ms[PEER, n]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
