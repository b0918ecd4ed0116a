"""The words' cluster part (``JoinedCloudClusterKernel``, the active study's ``--pool-words lsa`` and the open-set
study's ``--unlabeled-words lsa``) read as an active run reads it: round after round the labelled texts, the whole
pool and the test documents, each input an encoder unit vector whose cloud neighbours are found in the joined space.
lvgp's reading (an input found among the known texts by the digest of its values, its neighbours searched for once
and kept by that digest in :class:`~lvgp.kernels.ClusterKernel`'s memory) against the code before (kept below as :class:`BeforeJoinedCloudClusterKernel`, verbatim from commit
``db4acf6``: each input not seen searched for among every known text, then digested again and searched for in the
joined space by :class:`~lvgp.kernels.ClusterKernel`'s own memory), measured in the same run on the same inputs, with
whether their neighbours agree; then the search itself (``nearest_cloud_points``, every text's neighbours in the
joined cloud) against its code before (kept below as :func:`reference_nearest`, verbatim from commit ``c4c5020``: a new
tensor for each step of the distances; now in place).

    python benchmarks/joined_cloud_cost.py --threads 1      # the run recorded in benchmarks/README.md
    python benchmarks/joined_cloud_cost.py --quick          # seconds; what the test-suite runs

The vectors are random (unit encoder vectors of 384 dimensions joined to 300 words' coordinates, 20ng's whole
training part as the pool and its test split: 11,293 and 7,528 texts); what is measured is the reading, not a
kernel's quality. The kernels' making (the cloud's graph and spectrum, the same code in both) is timed apart.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from _threads import add_threads_option, resolve_threads


def before_class() -> Any:
    """``JoinedCloudClusterKernel`` as it was at commit ``db4acf6`` (its reading; its checks left out)."""
    import torch

    from lvgp.kernels import ClusterKernel
    from lvgp.kernels.point_cloud import nearest_cloud_points, row_digests

    class BeforeJoinedCloudClusterKernel(ClusterKernel):
        _known_rows: dict[bytes, int]

        def __init__(self, cloud, *, inputs, joined_inputs, **kwargs):
            super().__init__(cloud, **kwargs)
            self.register_buffer("inputs", inputs.detach().clone().to(cloud.dtype))
            self.register_buffer("joined_inputs", joined_inputs.detach().clone().to(cloud.dtype))

        def joined(self, x):
            flat = x.reshape(-1, x.shape[-1]).to(self.inputs.dtype)
            keys = row_digests(flat)
            missing = [i for i, key in enumerate(keys) if key not in self._known_rows]
            if missing:
                queries = flat[missing]
                known = nearest_cloud_points(queries, self.inputs, 1, exclude_exact=False)[:, 0]
                for i, row in zip(missing, known.tolist()):
                    self._known_rows[keys[i]] = row
            rows = torch.as_tensor([self._known_rows[key] for key in keys], dtype=torch.long)
            return self.joined_inputs[rows].reshape(*x.shape[:-1], self.joined_inputs.shape[-1])

        def nearest(self, x):
            return super().nearest(self.joined(x))

        def _forget_neighbours(self):
            super()._forget_neighbours()
            self._known_rows = {}

    return BeforeJoinedCloudClusterKernel


def reference_nearest(queries, cloud, n_neighbors, *, exclude_exact=True):
    """``nearest_cloud_points`` as it was at commit ``c4c5020`` (a new tensor for each step of the distances)."""
    import torch

    flat = queries.reshape(-1, queries.shape[-1])
    cloud_sq = (cloud * cloud).sum(-1)
    out = torch.empty(flat.shape[0], n_neighbors, dtype=torch.long, device=cloud.device)
    for start in range(0, flat.shape[0], 2048):
        rows = flat[start : start + 2048]
        rows_sq = (rows * rows).sum(-1, keepdim=True)
        d2 = (rows_sq + cloud_sq - 2 * rows @ cloud.T).clamp_min(0)
        if exclude_exact:
            d2 = torch.where(d2 <= 1e-12 * (rows_sq + cloud_sq), torch.full_like(d2, float("inf")), d2)
        out[start : start + len(rows)] = torch.topk(d2, n_neighbors, dim=-1, largest=False, sorted=True).indices
    return out.reshape(*queries.shape[:-1], n_neighbors)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--pool", type=int, default=11293, help="the cloud: the pool's texts")
    parser.add_argument("--test", type=int, default=7528, help="the test documents, read too")
    parser.add_argument("--rounds", type=int, default=40, help="the active run's rounds (20ng: 400 labels by 10)")
    parser.add_argument("--batch", type=int, default=10)
    add_threads_option(parser, default=1)
    args = parser.parse_args(argv)
    if args.quick:
        args.pool, args.test, args.rounds = 600, 300, 4
    threads = resolve_threads(args, default=1)

    import torch

    from lvgp.experiments.cluster_parts import cluster_part_settings
    from lvgp.experiments.executors import limit_threads
    from lvgp.experiments.joined_cloud import JoinedCloudClusterKernel

    limit_threads(threads)
    g = torch.Generator().manual_seed(0)
    m = args.pool + args.test
    vectors = torch.nn.functional.normalize(torch.randn(m, 384, generator=g, dtype=torch.float64), dim=-1)
    words = torch.nn.functional.normalize(torch.randn(m, 300, generator=g, dtype=torch.float64), dim=-1)
    joined = torch.cat([vectors, words], -1) / 2**0.5
    settings = cluster_part_settings(args.pool, 20)
    order = torch.randperm(args.pool, generator=g)
    test = vectors[args.pool :]
    print(
        f"cloud {args.pool} texts, {args.test} test documents, {args.rounds} rounds of {args.batch}; {threads} thread"
    )
    timings, found = {}, {}
    for name, cls in (("before (db4acf6)", before_class()), ("now", JoinedCloudClusterKernel)):
        start = time.perf_counter()
        kernel = cls(joined[: args.pool], inputs=vectors, joined_inputs=joined, **settings)
        made = time.perf_counter() - start
        start = time.perf_counter()
        reads = []
        for r in range(args.rounds):
            labelled = vectors[order[: 20 + args.batch * r]]
            reads.append(kernel.nearest(labelled))  # the fit's training inputs
            reads.append(kernel.nearest(vectors[: args.pool]))  # the pool's candidates (the labelled among them)
            reads.append(kernel.nearest(test))  # the test documents
        timings[name], found[name] = (made, time.perf_counter() - start), reads
        print(f"{name}: made in {made:.1f} s, read in {timings[name][1]:.2f} s")
    agree = all(torch.equal(a, b) for a, b in zip(found["before (db4acf6)"], found["now"]))
    ratio = timings["before (db4acf6)"][1] / timings["now"][1]
    print(f"the neighbours of every read: {'equal' if agree else 'DIFFERENT'}; reading speed-up {ratio:.1f}x")
    # the search itself: every pool text and test document's neighbours in the joined cloud, once
    from lvgp.kernels.point_cloud import nearest_cloud_points

    searched, search_seconds = {}, {}
    for name, search in (("before (c4c5020)", reference_nearest), ("now", nearest_cloud_points)):
        start = time.perf_counter()
        searched[name] = search(joined, joined[: args.pool], settings["n_neighbors"])
        search_seconds[name] = time.perf_counter() - start
        print(f"the search, {name}: {search_seconds[name]:.2f} s")
    same = torch.equal(searched["before (c4c5020)"], searched["now"])
    speed = search_seconds["before (c4c5020)"] / search_seconds["now"]
    print(f"the search's neighbours: {'equal' if same else 'DIFFERENT'}; search speed-up {speed:.1f}x")
    return 0 if agree and same else 1


if __name__ == "__main__":
    raise SystemExit(main())
