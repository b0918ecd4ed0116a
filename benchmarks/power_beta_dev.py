"""The power acquisition's exponent beta on dev draws (issue 57): the active study's protocol (one text a
class, batches of 10, ``gp-pool-power-epig``) with its pool and its held-out texts both drawn from a data set's
training part, so that no test document is read; one study folder a beta, the same draws for each.

The rule, written before the first run (2026-12-06): on 20ng (pool 5,000, held out 3,000, budget 400) the primary
metric is the GP's accuracy at half the budget, mean over the seeds; a beta other than 1 (Kirsch et al.'s default)
is adopted only if its paired difference to beta = 1 there is positive and above one standard error of the
paired differences, and its area under the curve is not below beta = 1's by more than one standard error; among
those, the highest mean at half the budget. Then on r8 (pool: its training part less 1,500 held-out texts, budget
200) the chosen beta's paired difference at half the budget must not be below minus one standard error, or beta
stays 1: one constant for every data set.

    python benchmarks/power_beta_dev.py --dataset 20ng --betas 1,2,4,0.5 --random --out /tmp/beta-dev
    python benchmarks/power_beta_dev.py --dataset r8 --betas 1,4,2 --out /tmp/beta-dev
    python benchmarks/power_beta_dev.py --quick        # a toy corpus, a tiny random encoder, two betas: seconds

EPIG's target count (``--epig-targets``, 100 target texts drawn from the unlabelled pool every round), by the same
rule with 100 in beta = 1's place, written before its first run (2026-12-06, fresh dev seeds 215-220): a
count other than 100 is adopted only if 20ng selects it (paired difference at half the budget positive and above
one standard error, area not more than one standard error behind) and r8 does not veto it (not more than one
standard error behind at half its budget). Its cost is part of the verdict, not of the rule: the acquisition's
seconds grow with the count.

    python benchmarks/power_beta_dev.py --dataset 20ng --epig-targets 100,300 --seed 215 --out /tmp/targets-dev
    python benchmarks/power_beta_dev.py --dataset r8 --epig-targets 100,300 --seed 215 --out /tmp/targets-dev

A share of every batch drawn at random (``--random-share``, 0: the whole batch the acquisition's), by the same rule
with 0 in beta = 1's place, written before its first run (2026-12-06, fresh dev seeds 221-226): the GP's lead over
random texts halves from 200 to 400 labels on 20ng's whole training part, and random texts among the acquired ones
are the common mend for a batch that drifts from the pool's distribution. A share is adopted only if 20ng selects
it and r8 does not veto it, as above.

    python benchmarks/power_beta_dev.py --dataset 20ng --random-shares 0,0.2 --seed 221 --out /tmp/share-dev
    python benchmarks/power_beta_dev.py --dataset r8 --random-shares 0,0.2 --seed 221 --out /tmp/share-dev

The batch conditioned on its own texts (``--strategies``: ``gp-pool-greedy-epig``, whose texts are chosen one after
another, each text's EPIG recomputed with the latent posterior conditioned on the texts chosen before it;
``lvgp.experiments.active.conditioned_power_batch``), by the same rule with ``gp-pool-power-epig`` in beta = 1's
place, written before its first run (2026-12-06, fresh dev seeds 227-232): the power acquisition draws every text of
a batch from one round's scores, so two texts that tell the same thing can both be drawn; conditioning is the
batch-aware mend (BatchBALD's), not tried before. Adopted (made the studies' default) only if 20ng selects it and r8
does not veto it, as above; its cost is part of the verdict.

    python benchmarks/power_beta_dev.py --dataset 20ng --strategies gp-pool-power-epig,gp-pool-greedy-epig:beta=1 \
        --seed 227 --out /tmp/greedy-dev
    python benchmarks/power_beta_dev.py --dataset r8 --strategies gp-pool-power-epig,gp-pool-greedy-epig:beta=1 \
        --seed 227 --out /tmp/greedy-dev

(Run then as ``gp-pool-greedy-epig``, whose exponent was ``--power-beta``'s, 1; since its adoption at beta 2 below,
the conditioned batch's exponent is its own, ``--greedy-beta``, which ``:beta=B`` sets for it.)

The conditioned batch with a greedier exponent (``--strategies gp-pool-power-epig,gp-pool-greedy-epig:beta=2``),
by the same rule with ``gp-pool-power-epig`` at beta = 1 in beta = 1's place, written before its first run
(2026-12-06, evening, fresh dev seeds 237-242): a greedier batch (beta 2) lifted 20ng at half the budget and lowered
r8 (seeds 209-214), and the greedier a batch the more alike its texts; conditioning keeps a greedy batch from taking
two texts that tell the same thing, so the two may together keep 20ng's gain without r8's loss. Adopted only if 20ng
selects it and r8 does not veto it. **Adopted** (20ng +0.0052 ± 0.0038 at half the budget, r8 +0.0089 ± 0.0027:
``benchmarks/README.md``, "The batch conditioned on its own texts"): ``gp-pool-greedy-epig`` at ``--greedy-beta`` 2
is the studies' default acquisition.

    python benchmarks/power_beta_dev.py --dataset 20ng --strategies gp-pool-power-epig,gp-pool-greedy-epig:beta=2 \
        --seed 237 --out /tmp/greedy-beta-dev
    python benchmarks/power_beta_dev.py --dataset r8 --strategies gp-pool-power-epig,gp-pool-greedy-epig:beta=2 \
        --seed 237 --out /tmp/greedy-beta-dev

The conditioned batch at a greedier exponent still
(``--strategies gp-pool-greedy-epig:beta=2,gp-pool-greedy-epig:beta=4``), by the same rule with
``gp-pool-greedy-epig`` at beta = 2 (the default) in beta = 1's place, written before its first run (2026-12-06,
night, fresh dev seeds 243-248): from beta 1 to 2 the conditioned batch gained on both corpora, and 20ng's
half-budget goal is still missed on its subsamples; conditioning may keep a greedier draw from taking alike texts at
4 too. Adopted only if 20ng selects it and r8 does not veto it. **Not adopted**: level on both (20ng -0.0006 ±
0.0054 at half the budget, r8 +0.0014 ± 0.0021; ``benchmarks/README.md``, "The batch conditioned on its own
texts"); the exponent stays 2.

    python benchmarks/power_beta_dev.py --dataset 20ng --seed 243 --out /tmp/greedy-beta4-dev \
        --strategies gp-pool-greedy-epig:beta=2,gp-pool-greedy-epig:beta=4
    python benchmarks/power_beta_dev.py --dataset r8 --seed 243 --out /tmp/greedy-beta4-dev \
        --strategies gp-pool-greedy-epig:beta=2,gp-pool-greedy-epig:beta=4

The GP's part on the encoder's vectors, an RBF in place of the cosine (``--strategies
gp-pool-greedy-epig,gp-pool-greedy-epig:encoder=rbf``: the active study's ``--encoder-part rbf``), by the same rule
with ``gp-pool-greedy-epig`` (the default, the encoder's cosine) in beta = 1's place, written before its first run
(2026-12-06, late, fresh dev seeds 249-254): the open-set study's GP has had a stationary (RBF) part on the encoder's
vectors since it was built, and at 10 and 50 texts a class on 20ng that GP's in-scope accuracy is 0.016-0.020 above
the same GP with the cosine part (``results/README.md``, "Out-of-scope detection"); the active study took the
cosine GP (``gpc-bow-encoder``) as its learner and kept it, and 20ng's half-budget goal is missed on its subsamples
by 0.009. Adopted (``--encoder-part``'s default)
only if 20ng selects it and r8 does not veto it, as above; its cost is part of the verdict. **Not adopted**: behind on
20ng (-0.0042 ± 0.0038 at half the budget, -0.0035 ± 0.0034 in area; ``benchmarks/README.md``, "The GP's part on the
encoder's vectors"); ``--encoder-part`` stays ``cosine``.

    python benchmarks/power_beta_dev.py --dataset 20ng --seed 249 --out /tmp/encoder-rbf-dev \
        --strategies gp-pool-greedy-epig,gp-pool-greedy-epig:encoder=rbf
    python benchmarks/power_beta_dev.py --dataset r8 --seed 249 --out /tmp/encoder-rbf-dev \
        --strategies gp-pool-greedy-epig,gp-pool-greedy-epig:encoder=rbf

The labels' choice of the encoder parts' weight (``--strategies gp-pool-greedy-epig,gp-pool-greedy-epig:weight=loo``:
the active study's ``--encoder-weight loo``, ``LDKGPClassifier(encoder_weight="loo")``), by the same rule with
``gp-pool-greedy-epig`` (the default, the evidence's weight) in beta = 1's place, written before its first run
(2026-12-06, late, fresh dev seeds 255-260): on the open-set study's dev draws the choice raised the stationary GP's
in-scope accuracy on 20ng's long texts by 0.018 at 10 texts a class and 0.015 at 50 (``benchmarks/README.md``, "Rule
19"); the active study's GP never had it. Adopted (``--encoder-weight``'s default) only if 20ng selects it and r8 does
not veto it, as above; its cost is part of the verdict. **Not adopted**: behind on 20ng (-0.0055 ± 0.0019 at half
the budget, -0.0031 ± 0.0010 in area; ``benchmarks/README.md``, "The labels' choice of the encoder parts' weight");
``--encoder-weight`` stays ``evidence``.

    python benchmarks/power_beta_dev.py --dataset 20ng --seed 255 --out /tmp/encoder-loo-dev \
        --strategies gp-pool-greedy-epig,gp-pool-greedy-epig:weight=loo
    python benchmarks/power_beta_dev.py --dataset r8 --seed 255 --out /tmp/encoder-loo-dev \
        --strategies gp-pool-greedy-epig,gp-pool-greedy-epig:weight=loo

The pool GP's second cluster part, its cloud the texts' encoder vectors joined to their words
(``--strategies gp-pool-greedy-epig,gp-pool-greedy-epig:words=lsa``: the active study's ``--pool-words lsa``,
``lvgp.experiments.active.pool_words_kernel``), by the same rule with ``gp-pool-greedy-epig`` (the default, one
cluster part on the encoder's vectors) in beta = 1's place, written before its first run (2026-12-06, night, fresh
dev seeds 262-267): on one dev draw of 20ng's training part (seed 261: its pool of 5,000 and held-out 3,000 texts,
kernel ridge on random labels as a stand-in for the GP, an analysis) the encoder's vectors alone put 0.705 of each
pool text's 10 nearest pool texts in its class, the vectors joined to the pool's tf-idf reduced to 300 dimensions
0.747; with the cluster kernel of the joined cloud as a second part beside the encoder's, both weights chosen by the
evidence, the held-out accuracy at 10 random texts a class rose from 0.707 to 0.735 (at 20 a class 0.729 to 0.755),
and on r8 it stayed level (0.946 to 0.950 at 10 a class; the joined cloud alone, in place of the encoder's, fell to
0.938, so it is a part beside, not instead). Adopted (``--pool-words``' default) only if 20ng selects it and r8 does
not veto it, as above; its cost is part of the verdict. **Adopted**: ahead on every seed of both corpora at half the
budget (20ng +0.0332 ± 0.0053, r8 +0.0086 ± 0.0030; ``benchmarks/README.md``, "The pool's words in the pool GP's
cluster parts"), at 1.6x (20ng) and 2.4x (r8) the seconds of a run: ``--pool-words lsa`` is the studies' default.
Run then as ``gp-pool-greedy-epig,gp-pool-greedy-epig:words=lsa`` (the default was ``none``); with the default now
``lsa``, the same two studies are

    python benchmarks/power_beta_dev.py --dataset 20ng --seed 262 --out /tmp/pool-words-dev \
        --strategies gp-pool-greedy-epig:words=none,gp-pool-greedy-epig
    python benchmarks/power_beta_dev.py --dataset r8 --seed 262 --out /tmp/pool-words-dev \
        --strategies gp-pool-greedy-epig:words=none,gp-pool-greedy-epig

A run resumes from ``--out``'s folders (``<dataset>-beta<b>/cells``, ``<dataset>-targets<t>/cells``,
``<dataset>-share<s>/cells``, ``<dataset>-strategies/cells``, ``<dataset>-strategies-beta<b>/cells``,
``<dataset>-strategies-encoder-<e>/cells``, ``<dataset>-strategies-weight-<w>/cells``,
``<dataset>-strategies-words-<w>/cells``). Printed: a
table a setting (``--random``: and random sampling with logistic regression
at the budget, for reference), the seconds a run, the selection's choice (the 20ng part of the rule) and the settings
the check (the r8 part) vetoes.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from pathlib import Path

import numpy as np

STRATEGY = "gp-pool-power-epig"
#: ``--strategies`` entries' settings beside ``beta=``: the key, and the active study's option it sets
ENTRY_OPTIONS = {"encoder": "encoder_part", "weight": "encoder_weight", "words": "pool_words"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="20ng", help="20ng or r8: its training part alone")
    parser.add_argument("--betas", default="1,2,4,0.5", help="the exponents; the first is the reference")
    parser.add_argument(
        "--epig-targets", default=None, help="EPIG's target counts instead of the exponents; the first is the reference"
    )
    parser.add_argument(
        "--random-shares",
        default=None,
        help="the batch's random shares instead of the exponents; the first the reference",
    )
    parser.add_argument(
        "--strategies",
        default=None,
        help="strategies instead of the exponents, each 'name', 'name:beta=B' (at exponent B), "
        "'name:encoder=rbf' (the GP's encoder part), 'name:weight=loo' (its encoder weight) or 'name:words=lsa' "
        "(the pool GP's second cluster part, on the texts' encoder vectors and words); the first the reference",
    )
    parser.add_argument("--seed", type=int, default=209, help="the first seed (the draws: seed + k, k < --seeds)")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--random", action="store_true", help="also random sampling with logistic regression")
    parser.add_argument("--out", default=None, help="the study folders (default: a temporary folder, removed)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a toy corpus and a tiny random encoder")
    args = parser.parse_args(argv)

    import warnings

    from lvgp.experiments import active
    from lvgp.experiments.executors import InProcessExecutor, limit_threads

    sys.path.insert(0, str(Path(__file__).parent))
    from open_set_dev import scratch_folder, toy_corpus, training_part_split

    limit_threads(args.threads)
    warnings.simplefilter("ignore")
    # the setting varied: its name in the study folders and in the table, and its values (the first the reference)
    if sum(bool(v) for v in (args.epig_targets, args.random_shares, args.strategies)) > 1:
        parser.error("--epig-targets, --random-shares and --strategies: one setting at a time")
    lever, setting = (
        ("targets", "EPIG targets") if args.epig_targets else ("share", "random share") if args.random_shares
        else ("beta", "beta")
    )  # fmt: skip
    values: list = [float(v) for v in (args.epig_targets or args.random_shares or args.betas).split(",")]
    if args.strategies:
        lever, setting, values = "strategies", "strategy", args.strategies.split(",")
    sizes = {"20ng": (5000, 3000, 400), "r8": (None, 1500, 200)}  # pool, held out, budget

    @dataclasses.dataclass(frozen=True)
    class DevStudy(active.ActiveStudy):
        held_out: int = 3000

        @functools.lru_cache(maxsize=4)  # noqa: B019  (frozen and hashable)
        def split(self, split: int) -> active.ActiveSplit:  # the training part alone
            rng = np.random.default_rng([self.seed + split, 57])
            return training_part_split(self.dataset, rng, self.pool_size, self.held_out, True, True)

    with scratch_folder(args.out, "power-beta-dev-") as root:
        if args.quick:
            toy_corpus(root / "toy.tsv")
            dataset, (pool, held, budget), batch, extra = str(root / "toy.tsv"), (None, 40, 24), 4, {"ldk_max_iter": 5}
            name, seeds, values = "toy", min(args.seeds, 2), values[:2]
        else:
            dataset, (pool, held, budget), batch, extra = args.dataset, sizes[args.dataset], 10, {}
            name, seeds = args.dataset, args.seeds

        def run(value: float, strategies: tuple[str, ...], entry: dict | None = None) -> dict[str, dict[int, dict]]:
            options = {"beta": "power_beta", "targets": "epig_targets", "share": "random_share"}  # the lever's option
            setting = {} if lever == "strategies" else {options[lever]: int(value) if lever == "targets" else value}
            folder = f"{name}-strategies" if lever == "strategies" else f"{name}-{lever}{value:g}"
            if entry:  # a strategy of the strategies lever with a setting of its own: its own study
                setting, folder = {}, f"{name}-strategies"
                if "beta" in entry:  # at another exponent
                    conditioned = active.STRATEGIES[strategies[0]][1].startswith("greedy-")
                    setting["greedy_beta" if conditioned else "power_beta"] = float(entry["beta"])
                    folder += f"-beta{float(entry['beta']):g}"
                for key, option in ENTRY_OPTIONS.items():  # the GP's settings
                    if key in entry:
                        setting[option] = entry[key]
                        folder += f"-{key}-{entry[key]}"
            study = DevStudy(
                dataset=dataset, budget=budget, batch=batch, splits=seeds, strategies=strategies, pool_size=pool,
                seed=args.seed, held_out=held, **extra, **setting,
            )  # fmt: skip
            records = study.run(root / folder, InProcessExecutor(args.threads), progress=False)
            out: dict[str, dict[int, dict]] = {}
            for r in records["records"]:
                out.setdefault(r["method"], {})[r["split"]] = r
            return out

        if lever == "strategies":  # a study of the plain strategies, one a "name:key=value" entry
            entries = {v: strategy_entry(v) for v in values}
            plain = tuple(v for v, (_, e) in entries.items() if not e) + (("random",) if args.random else ())
            cells = run(0.0, plain) if plain else {}
            for v, (strategy, e) in entries.items():
                if e:
                    cells[v] = run(0.0, (strategy,), entry=e)[strategy]
            runs = {v: {STRATEGY: cells[v], **({"random": cells["random"]} if args.random else {})} for v in values}
        else:
            runs = {v: run(v, (STRATEGY, "random") if args.random and v == values[0] else (STRATEGY,)) for v in values}
        half = budget // 2
        print(rule_table(runs, values, half, name, seeds, setting))
    return 0


def strategy_entry(entry: str) -> tuple[str, dict[str, str]]:
    """``--strategies``' entry: a strategy, or ``name:key=value[:key=value]``, the strategy with its own settings:
    ``beta=B``, the exponent ``B`` (``--greedy-beta`` for the conditioned batch, ``--power-beta`` for the others);
    ``encoder=E``, the GP's encoder part (``--encoder-part``: cosine or rbf); ``weight=W``, the GP's encoder weight
    (``--encoder-weight``: evidence or loo); ``words=W``, the pool GP's cluster parts (``--pool-words``: none or lsa).
    ``(name, {key: value})``."""
    from lvgp.experiments.active import ActiveStudy

    choices = {field.name: field.metadata.get("choices") for field in dataclasses.fields(ActiveStudy)}
    allowed = {key: choices[option] for key, option in ENTRY_OPTIONS.items()}  # the options' own choices
    name, *options = entry.split(":")
    settings: dict[str, str] = {}
    for option in options:
        key, _, value = option.partition("=")
        if key not in ("beta", *allowed) or not value or value not in allowed.get(key, (value,)):
            raise SystemExit(
                f"--strategies: {entry!r}: an entry is a strategy, or a strategy and its settings "
                "('name:beta=B', 'name:encoder=rbf', 'name:weight=loo', 'name:words=lsa', joined by ':')"
            )
        if key == "beta":
            try:
                float(value)
            except ValueError:
                raise SystemExit(f"--strategies: {entry!r}: beta={value!r} is not a number") from None
        settings[key] = value
    return name, settings


def _show(value: float | str) -> str:
    return value if isinstance(value, str) else f"{value:g}"


def rule_table(runs: dict, values: list, half: int, name: str, seeds: int, setting: str = "beta") -> str:
    """The table a value of the setting (a beta or a target count; ``values[0]`` the reference) and the rule's
    choice (the module docstring)."""
    from lvgp.experiments.active import _at  # the study's own: the last point at most ``half`` (r8's 98 for 100)

    def se(x: np.ndarray) -> float:
        return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")

    reference = runs[values[0]][STRATEGY]
    lines = [
        f"{name}, {seeds} seeds: the GP ({'each' if setting == 'strategy' else STRATEGY}) at half the budget "
        f"({half} labels), paired against {setting} = "
        f"{_show(values[0])}",
        "",
        f"| {setting} | accuracy at half | paired difference at half | paired difference of the area | s a run |",
        "|---|---|---|---|---|",
    ]
    qualified, below = [], []
    for value in values:
        cells = runs[value][STRATEGY]
        at_half = np.array([_at(cells[s], half) for s in sorted(cells)])
        d = np.array([_at(cells[s], half) - _at(reference[s], half) for s in sorted(cells)])
        a = np.array([cells[s]["aulc"] - reference[s]["aulc"] for s in sorted(cells)])
        seconds = np.mean([cells[s]["fit_seconds"] + cells[s]["acquire_seconds"] for s in cells])
        lines.append(
            f"| {_show(value)} | {at_half.mean():.4f} | {d.mean():+.4f} ± {se(d):.4f} "
            f"| {a.mean():+.4f} ± {se(a):.4f} "
            f"| {seconds:.0f} |"
        )
        if value != values[0] and d.mean() > 0 and d.mean() > se(d) and a.mean() >= -se(a):
            qualified.append((at_half.mean(), value))
        if d.mean() < -se(d):
            below.append(value)
    random = runs[values[0]].get("random")
    if random:
        gap = np.array([_at(reference[s], half) - random[s]["final_accuracy"] for s in sorted(reference)])
        lines.append(
            f"\n{setting} = {_show(values[0])} at half the budget minus random sampling (logistic regression) at the "
            "budget: "
            f"{gap.mean():+.4f} ± {se(gap):.4f} ({int((gap >= 0).sum())} of {len(gap)} at or above)"
        )
    choice = max(qualified)[1] if qualified else values[0]
    lines.append(f"\nThe selection's choice on {name}: {setting} = {_show(choice)}")
    lines.append(
        f"Below {setting} = {_show(values[0])} by more than one standard error at half the budget (vetoed by the check "
        "on "
        f"{name}): {', '.join(_show(b) for b in below) or 'none'}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
