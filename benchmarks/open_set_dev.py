"""Out-of-scope detection on dev documents only (issue 57): which novelty score and which kernel the
GP classifier should use, chosen without a test document.

The protocol of ``lvgp compare open-set`` run on the *training* part of r8 and 20ng alone: the
training part is written to a TSV, unknown classes are drawn with another seed than the committed
studies' (``--seed 1``), N texts a known class are labelled, and the dev documents are the training
part's unlabelled rest (in scope: the known classes'; out of scope: the unknown ones'), subsampled.
The standard test splits are never read. Prints, per corpus and size, every method's AUROC under
every score it offers and its in-scope accuracy.

    python benchmarks/open_set_dev.py                   # r8 (2 unknown) and 20ng (5 unknown), 10 and 50 a class
    python benchmarks/open_set_dev.py --seed 5,6,7      # nine draws, then the GP scores' means over them
    python benchmarks/open_set_dev.py --quick           # a toy corpus and a tiny random encoder (seconds)

``--dev-size 0``: every dev document of a split (default: 2,000 drawn). With ``tfidf-encoder-logreg`` or
``encoder-mahalanobis`` among the methods, the last lines pair every method with it draw by draw, in in-scope
accuracy or in its own score's AUROC (:func:`paired_against`).

``--gp-tf sublinear``: the GP classifiers' tf-idf parts count a word said ``c`` times as ``1 + ln c``
(scikit-learn's ``sublinear_tf``, as the baselines' tf-idf does); ``--gp-tf raw``: as ``c``; the default,
each method's own (``gpc-bow`` sublinear since this choice, the encoder GPs raw).

``--encoder-weight fixed``: the tf-idf GPs' encoder part keeps its weight where both parts weigh alike on the
labelled texts (the tf-idf cosine's mean self-similarity) instead of the evidence's
(``beside_encoder(fit_weights=False)``; one process: ``--jobs 1``). ``--encoder-weight fixed-unit``: and the RBF
part's length-scale fixed at 1 (on unit vectors exp(cos - 1)): with the weight held, the evidence can
switch the encoder part off through the length-scale instead (r52 at 10 a class: ``benchmarks/README.md``, "Rule 15").

``--encoder-weight loo``: after the evidence's fit, the encoder part's weight times the factor of 1/8, 1/4, 1/2, 1
with the least tempered leave-one-out log loss of the training labels (:func:`leave_one_out_weight_classifier`).
``--encoder-weight loo-guarded`` (rule 18): a factor below 1 only where its leave-one-out gain exceeds one
standard error and its leave-one-out accuracy is at most one text below 1's. ``--encoder-weight loo-long``
(rules 19-20): that guarded choice only where the labelled texts' median length is at least
:data:`~lvgp.models.gpc.encoder_weight.LONG_TEXT_WORDS` words, else the evidence's weight -- the library's
``LDKGPClassifier(encoder_weight="loo")``, which the study's ``gpc-bow-encoder-rbf`` now uses (``study``).

``--encoder-part matern`` (rule 21): ``gpc-bow-encoder-rbf``'s stationary encoder part a Matern 5/2 kernel of the
unit vectors in place of the RBF (the SNGP argument's other stationary kernel), every other setting the study's
(one process: ``--jobs 1``). ``--encoder-part cosine-rbf`` (rule 25): a cosine part of the encoder's vectors beside
the RBF, each with its own weight (``encoder_kernel=["cosine", "rbf"]``): logistic regression's kernel for the
classes, the RBF for the distance.

``--encoder-part within-rbf`` / ``whitened-rbf``: the RBF of the unit vectors mapped by the Mahalanobis detector's
whitening (the Ledoit-Wolf precision of the labelled texts' vectors centred on their classes' means, or on their
overall mean: :func:`whitening_map`); a screen, not adopted (``benchmarks/README.md``, "The Mahalanobis detector's
metric in the GP's RBF").

``--gp-vocabulary negations`` (rule 26): the tf-idf GPs' words those of the baselines' tf-idf as near as lvgp's
:class:`~lvgp.Vocabulary` reads them -- scikit-learn's stop words but the negations, tokens of two letters or more
(``default_tfidf``'s; its digits excepted: lvgp's tokens are letters) -- in place of the study's (every stop word out,
three letters or more). ``--gp-vocabulary two-letters`` (rule 27): the study's words and tokens of two letters
(*vs*, which marks r8's *earn*, among them; every stop word still out) -- the study's own since rule 27 earned it, so
that ``study`` and ``two-letters`` are now the same.

``--alpha-epsilon A`` (rule 22): the GP classifiers' Dirichlet pseudo-count ``A`` (Milios et al.'s default 0.01)
in place of the study's 1e-6, which sets how far the transformed labels of the other classes lie below a text's
own (log pseudo-counts; the energy is their log-sum-exp) and how noisy they are (one process: ``--jobs 1``).

``--noise-prior-sd none`` (rule 32): the GP classifiers' learned additional noise without the library's log-normal
prior (``LDKGPClassifier(noise_prior_sd=None)``: the evidence alone, as before the prior); a number: that prior's
sd in place of the library's (one process: ``--jobs 1``).

``--gpc-inference laplace`` / ``variational`` (rule 39): the GP classifiers under that inference in place of the
Dirichlet one, as the classification study's ``--gpc-inference`` builds them (``with_gpc_inference``: the Laplace
fit untempered, the variational one tempered on early stopping's held-out texts), scored by the energy and the
scores every inference offers (the Dirichlet reference scores, the lifted energy among them, need the Dirichlet
leave-one-out predictions), the encoder part's weight the fit's own (``encoder_weight="evidence"``); compare the
scores with ``--paired-scores energy,entropy`` (one process: ``--jobs 1``).

``--paired-auroc-with M1,M2``: those baselines (of ``--methods``) in place of the Mahalanobis detector for the
AUROC pairings, one table each; with the ``--out`` of a finished run, the same command reads its records again
(the study resumes) and prints them at once.

``--paired-scores A,B``: for each GP method, its AUROC under the novelty score ``B`` minus under ``A``, draw by
draw (one fit gives both: :func:`paired_scores`; rule 23: ``energy,centred-energy``).

``--paired-with DIR``: each method paired draw by draw with the same method of the run saved in ``DIR`` (its
``--out``: the same corpora, seeds and sizes, another variant), in accuracy and in its own score's AUROC.

``--gpc-objective loo``: the GP classifiers' hyper-parameters by the leave-one-out log probability of the
labelled texts after the evidence (``LDKGPClassifier(objective="loo")``).

``--unlabeled-texts all`` (the default here) or ``known-classes``: the study's option, the unlabelled texts
of ``gpc-pool-bow-encoder-rbf`` -- every row of the training part that is not a dev document, or the known
classes' rows alone. ``--unlabeled-words lsa``: the study's option, beside the cluster part of the unlabelled
texts' encoder vectors a second one, its cloud each text's encoder vector joined to its words' coordinates (the active
study's ``--pool-words lsa``; ``none``, the default, the study's). The rule it was tried by is in
``benchmarks/README.md``, "The words' cluster part in the open-set GP".

``--first-words N``: each text of the training part cut to its first ``N`` words (the rows left with fewer
than 3 words are left out, their number printed): short texts, a stand-in for an intent set's queries.
``--datasets r52``: 52 topics, 10 of them unknown a split. ``--datasets 20ng+r52``: 20ng's newsgroups beside r52's
topics of 20 training texts or more, each class cut to 150 (:func:`mixed_corpus`): 44 classes, 5 unknown a split, a
stand-in for an intent set's many balanced classes.

``--unseen-words whole-bag``: the GP classifiers' tf-idf cosine over each scored text's whole bag of
words -- its words that no labelled text has counted in its norm, at the largest idf (their document
frequency among the labelled texts is 0) -- in place of the library's policy, which drops them before
the cosine (a text of unseen words alone is then compared by its few known ones). Emulated exactly:
the GP's word list is fitted on the labelled and the scored texts, its idf on the labelled ones alone
(:func:`whole_bag_vocabulary`; ``tests/test_open_set.py`` checks the kernel against the cosine of the
whole bags). One process (``--jobs`` is ignored).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from lvgp.base.novelty import NOVELTY_SCORE_NAMES

UNKNOWN = {"r8": 2, "20ng": 5, "r52": 10, "20ng+r52": 5}
#: ``20ng+r52``: r52's topics of at least this many training texts beside 20ng's newsgroups, every class cut to at
#: most :data:`MIXED_CAP` texts (a fixed draw): more balanced classes than either corpus has (:func:`mixed_corpus`)
MIXED_MIN_TEXTS = 20
MIXED_CAP = 150
METHODS = (
    "gpc-bow,gpc-bow-encoder-rbf,gpc-pool-bow-encoder-rbf,gpc-bow-encoder,gpc-encoder-rbf,gpc-encoder,"
    "tfidf-encoder-logreg,encoder-logreg,encoder-mahalanobis,encoder-knn,svm"
)


def toy_corpus(path: Path) -> None:
    """Four topics of made-up texts, and a tiny random encoder standing in for the pretrained one."""
    from lvgp.encoders import SentenceEncoder
    from lvgp.encoders import sentence as sentence_module

    tiny = SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, seed=0)
    sentence_module.shared_encoder = lambda name="x", device="cpu": tiny
    rng = np.random.default_rng(0)
    words = {
        "pos": "good great fine nice lovely",
        "neg": "bad awful poor dull weak",
        "money": "tax bank money loan rate",
        "sport": "goal team match score win",
    }
    rows = ["text\tlabel"] + [
        " ".join(rng.choice(words[c].split(), 4)) + f" note {i}\t{c}" for i in range(40) for c in words
    ]
    path.write_text("\n".join(rows) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a toy corpus and a tiny random encoder")
    parser.add_argument("--datasets", default="r8,20ng")
    parser.add_argument("--per-class", default="10,50")
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--dev-size", type=int, default=2000, help="dev documents a split (0: every one)")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument(
        "--first-words",
        type=int,
        default=None,
        help="cut each text to its first N words (rows left with fewer than 3 left out; module docstring)",
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--seed",
        default=None,
        help="the draws of unknown classes and texts, one seed or several (2,3,4: each seed's draws in turn, then "
        "the GP scores' means over all of them); 1 (the default; 1,2 with --quick): other draws than the committed "
        "test studies' seed 0; 0: the test studies' unknown classes, to tell their classes from their test documents",
    )
    parser.add_argument(
        "--out", default=None, help="keep the study folders here (default: a temporary folder, removed at the end)"
    )
    parser.add_argument(
        "--gp-tf",
        default="study",
        choices=("study", "raw", "sublinear"),
        help="the GP classifiers' tf-idf counts: the study's (gpc-bow sublinear, the others raw), raw counts for "
        "all, or 1 + ln count for all (module docstring)",
    )
    parser.add_argument(
        "--paired-with",
        default=None,
        help="the --out folder of another run of the same corpora, seeds and methods (another variant): each method "
        "paired with its run there, draw by draw",
    )
    parser.add_argument(
        "--paired-auroc-with",
        default=None,
        help="baselines M1,M2,... each method's AUROC is paired with, draw by draw (default: encoder-mahalanobis)",
    )
    parser.add_argument(
        "--paired-scores",
        default=None,
        help="two novelty scores A,B: for each GP method, B's AUROC minus A's, draw by draw (module docstring)",
    )
    parser.add_argument(
        "--encoder-weight",
        default="study",
        choices=ENCODER_WEIGHTS,
        help="the tf-idf GPs' encoder part: the study's; its weight and length-scale fitted by the evidence; its "
        "weight fixed where both parts weigh alike; and the RBF part's length-scale fixed at 1; the evidence's "
        "weight times the factor of the least leave-one-out log loss, without or with rule 18's guards, or those "
        "on long texts alone (module docstring)",
    )
    parser.add_argument(
        "--unseen-words",
        default="drop",
        choices=("drop", "whole-bag"),
        help="the GP classifiers' scored texts: their unseen words dropped (the library's policy) or counted in "
        "the tf-idf norm (module docstring)",
    )
    parser.add_argument(
        "--unlabeled-texts",
        default="all",
        choices=("all", "known-classes"),
        help="the pool GP's unlabelled texts (the study's --unlabeled-texts; module docstring)",
    )
    parser.add_argument(
        "--unlabeled-words",
        default="none",
        choices=("none", "lsa"),
        help="the pool GP's cluster part of its texts joined to their words (the study's --unlabeled-words)",
    )
    parser.add_argument(
        "--gpc-objective",
        default="evidence",
        choices=("evidence", "loo"),
        help="what the GP classifiers' hyper-parameters maximize (the study's --gpc-objective)",
    )
    parser.add_argument(
        "--encoder-part",
        default="study",
        choices=("study", "matern", "cosine-rbf", "whitened-rbf", "within-rbf"),
        help="gpc-bow-encoder-rbf's stationary encoder part: the study's RBF, a Matern 5/2 in its place, a cosine "
        "part beside the RBF, or the RBF in the Mahalanobis detector's metric (module docstring)",
    )
    parser.add_argument(
        "--gp-vocabulary",
        choices=("study", "negations", "two-letters"),
        default="study",
        help="the tf-idf GPs' vocabulary: the study's, or the stop words but the negations out, 2+ letters (rule 26), "
        "or the study's with tokens of 2 letters (rule 27)",
    )
    parser.add_argument(
        "--alpha-epsilon",
        type=float,
        default=None,
        help="the GP classifiers' Dirichlet pseudo-count in place of the study's 1e-6 (module docstring)",
    )
    parser.add_argument(
        "--gpc-inference",
        choices=("dirichlet", "laplace", "variational"),
        default="dirichlet",
        help="the GP classifiers' inference (module docstring; rule 39)",
    )
    parser.add_argument(
        "--noise-prior-sd",
        default=None,
        help="the GP classifiers' noise_prior_sd in place of the library's: a positive number, or 'none' (no prior; "
        "module docstring)",
    )
    args = parser.parse_args()
    noise_prior_sd = LIBRARY if args.noise_prior_sd is None else noise_prior_sd_argument(args.noise_prior_sd)

    from lvgp.experiments.executors import InProcessExecutor, ProcessExecutor, limit_threads
    from lvgp.experiments.open_set import OpenSetStudy

    variant = args.encoder_weight != "study" or args.encoder_part != "study" or args.alpha_epsilon is not None
    variant = variant or args.gp_vocabulary != "study" or noise_prior_sd is not LIBRARY
    variant = variant or args.gpc_inference != "dirichlet"
    if args.unseen_words == "whole-bag" or args.gp_tf != "study" or variant:
        counts = None if args.gp_tf == "study" else args.gp_tf == "sublinear"
        OpenSetStudy = variant_study(  # noqa: N806
            args.unseen_words == "whole-bag",
            counts,
            args.encoder_weight,
            args.encoder_part,
            args.alpha_epsilon,
            args.gp_vocabulary,
            noise_prior_sd,
            args.gpc_inference,
        )
        args.jobs = 1  # (the study class of this run is defined here: one process)

    limit_threads(1)
    warnings.simplefilter("ignore")
    with scratch_folder(args.out, "open-set-dev-") as root:
        runs = dev_runs(root, args.datasets, args.per_class, args.splits, args.dev_size, args.quick, args.first_words)
        methods = (
            "gpc-bow-encoder-rbf,gpc-pool-bow-encoder-rbf,tfidf-encoder-logreg,encoder-knn,svm"
            if args.quick
            else args.methods
        ).split(",")
        seeds = [int(seed) for seed in (args.seed or ("1,2" if args.quick else "1")).split(",")]
        every: list[dict] = []  # the records of every seed
        for seed in seeds:
            # one seed alone keeps the folders of before (root/<corpus>); several go to root/seed<k>/<corpus>
            folder = root if len(seeds) == 1 else root / f"seed{seed}"
            print(f"\nseed {seed}\n\n{_HEADER}")
            for run in runs:
                name, sizes = run[0], run[3]
                study = dev_study(
                    run,
                    methods,
                    seed,
                    args.quick,
                    OpenSetStudy,
                    args.gpc_objective,
                    args.unlabeled_texts,
                    args.unlabeled_words,
                )
                executor = (
                    InProcessExecutor() if args.jobs == 1 or args.quick else ProcessExecutor(args.jobs, threads=1)
                )
                records = study.run(folder / name, executor, progress=False)["records"]
                (folder / f"{name}.json").write_text(json.dumps(records))
                every += [{**r, "corpus": name, "seed": seed} for r in records]
                for n in sizes:
                    for m in methods:
                        rows = [r for r in records if r["method"] == m and r["per_class"] == n]
                        if rows:
                            print(f"| {name} | {n} | {m} | " + " | ".join(_cells(rows)) + " |")
            print("\nAUROC of out-of-scope dev documents, mean over the splits; * the method's own score (its default)")
        if len(seeds) > 1:
            _means_over_seeds(every, seeds, methods)
        pairs = [("accuracy", PAIRED_BASELINES["accuracy"])]
        pairs += [("oos_auroc", b) for b in (args.paired_auroc_with or PAIRED_BASELINES["oos_auroc"]).split(",")]
        for key, baseline in pairs:
            if baseline in methods and len(methods) > 1:
                print(paired_against(every, baseline, key))
        if args.paired_with:
            print(paired_with_run(every, Path(args.paired_with), seeds))
        if args.paired_scores:
            print(paired_scores(every, *args.paired_scores.split(",")))


def training_part_split(
    dataset: str,
    rng: np.random.Generator,
    pool_size: int | None,
    held_out: int,
    held_out_first: bool,
    sort_pool: bool,
):
    """An active study's split drawn from a data set's training part alone (dev draws: no test document read): the
    part's rows permuted by ``rng``, ``held_out`` of them the scored texts and ``pool_size`` (``None``: the rest)
    the pool, then one pool text a class to start (the same ``rng``, classes in sorted order). ``held_out_first``:
    the held-out rows are the permutation's first, else the pool's are; ``sort_pool``: the pool in the part's
    order. Each dev script keeps its stream and order (``power_beta_dev.py``: held out first, the pool sorted;
    ``point_cloud_dev.py``: the pool first, in drawn order), so that its recorded draws are drawn again."""
    from lvgp.experiments import active
    from lvgp.experiments.open_set import classification_corpus

    corpus = classification_corpus(dataset)
    texts, labels = list(corpus.train_texts), np.asarray(corpus.train_labels).astype(str)
    order = rng.permutation(len(labels))
    if held_out_first:
        held, rest = order[:held_out], order[held_out:]
        pool = rest[:pool_size] if pool_size else rest
    else:
        end = pool_size if pool_size else len(order) - held_out
        pool, held = order[:end], order[end : end + held_out]
    pool = np.sort(pool) if sort_pool else pool
    pool_labels = labels[pool]
    start = np.array([rng.choice(np.flatnonzero(pool_labels == c)) for c in np.unique(pool_labels)])
    return active.ActiveSplit([texts[i] for i in pool], pool_labels, start, [texts[i] for i in held], labels[held])


@contextlib.contextmanager
def scratch_folder(out: str | None, prefix: str) -> Iterator[Path]:
    """``out`` (made if missing), kept; without it a temporary folder named ``prefix...``, removed when the block
    ends, also on an error or Ctrl-C (the study folders of a run without ``--out``: nothing left in the temporary
    directory, however many runs)."""
    if out:
        root = Path(out)
        root.mkdir(parents=True, exist_ok=True)
        yield root
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield Path(folder)


def draw_arguments(
    parser: argparse.ArgumentParser, datasets: str, seed: str, quick_seed: str = "1", first_words: int | None = None
) -> None:
    """The options this script's siblings (``open_set_{accuracy,calibration,threshold}_dev.py``) share:
    ``--quick``, ``--datasets``, ``--first-words`` (where ``first_words`` is given: its default, 0 for whole
    texts), ``--per-class``, ``--splits``, ``--seed`` (``seed``; ``quick_seed`` with ``--quick``: see
    :func:`draw_seeds`), ``--threads`` and ``--out`` (where the training parts' TSVs are written)."""
    parser.add_argument("--quick", action="store_true", help="a toy corpus and a tiny random encoder")
    parser.add_argument("--datasets", default=datasets)
    if first_words is not None:
        parser.add_argument(
            "--first-words", type=int, default=first_words, help="each text cut to its first N words (0: whole)"
        )
    parser.add_argument("--per-class", default="10,50")
    parser.add_argument(
        "--unknown-classes",
        type=int,
        default=None,
        help="classes drawn out of scope a draw (default: r8 2, 20ng 5, r52 10)",
    )
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--seed", default=None, help=f"the draws' seeds (default {seed}; --quick: {quick_seed})")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--out", default=None, help="the training parts' TSVs (default: a temporary folder, removed at the end)"
    )
    parser.set_defaults(default_seed=seed, quick_seed=quick_seed)


def draw_seeds(args: argparse.Namespace) -> None:
    """``args.seeds``: the seeds of :func:`draw_arguments`' ``--seed`` as ints, or its defaults (the quick one
    with ``--quick``)."""
    args.seeds = [int(s) for s in (args.seed or (args.quick_seed if args.quick else args.default_seed)).split(",")]


def draw_runs(root: Path, args: argparse.Namespace, dev_size: int = 0) -> list[tuple]:
    """:func:`dev_runs` of the options :func:`draw_arguments` gives (``dev_size``: dev documents a split, 0: every
    one)."""
    return dev_runs(
        root,
        args.datasets,
        args.per_class,
        args.splits,
        dev_size,
        args.quick,
        args.first_words or None,
        args.unknown_classes,
    )


def dev_runs(
    root: Path,
    datasets: str,
    per_class: str,
    splits: int,
    dev_size: int,
    quick: bool,
    first_words: int | None = None,
    unknown: int | None = None,
) -> list[tuple]:
    """The corpora of a dev run, ``(name, TSV of its training part alone, unknown classes, texts a class,
    splits, dev documents a split)`` each; with ``quick`` the toy corpus (and the tiny encoder); with
    ``first_words``, each text cut to its first that many words (rows left with fewer than 3 left out); ``unknown``:
    the unknown classes a draw of every corpus (default :data:`UNKNOWN`'s)."""
    if quick:
        toy_corpus(root / "toy.tsv")
        return [("toy", str(root / "toy.tsv"), 1 if unknown is None else unknown, (5,), 1, 60)]
    from lvgp.datasets.loaders import load_corpus

    runs = []
    for name in datasets.split(","):
        corpus = mixed_corpus() if name == "20ng+r52" else load_corpus(name, "classification")  # its training part
        path = root / (f"{name}-train.tsv" if first_words is None else f"{name}-train-first{first_words}.tsv")
        if not path.exists():
            left_out = write_training_tsv(path, corpus.train_texts, corpus.train_labels, first_words)
            if left_out:
                print(f"{name}: {left_out} of {len(corpus.train_texts)} texts have fewer than 3 words: left out")
        classes = UNKNOWN[name] if unknown is None else unknown
        runs.append((name, str(path), classes, tuple(int(n) for n in per_class.split(",")), splits, dev_size))
    return runs


def mixed_corpus():
    """``20ng+r52``'s training part: 20ng's 20 newsgroups and r52's topics of at least :data:`MIXED_MIN_TEXTS`
    training texts (24), each class's texts cut to at most :data:`MIXED_CAP` (drawn once, seed 0), labels prefixed
    by their corpus. 44 classes of 20 to 150 texts: a stand-in for an intent set's many balanced classes (issue 57),
    where neither corpus alone has more than 20 balanced ones. The standard test splits are never read."""
    from collections import Counter

    from lvgp.datasets.loaders import ClassificationCorpus, load_corpus

    rng = np.random.default_rng(0)
    texts: list[str] = []
    labels: list[str] = []
    for name in ("20ng", "r52"):
        corpus = load_corpus(name, "classification")
        y = np.asarray(corpus.train_labels)
        counts = Counter(y.tolist())
        for c in sorted(counts):
            if counts[c] < MIXED_MIN_TEXTS:
                continue
            rows = np.flatnonzero(y == c)
            for i in sorted(rng.choice(rows, min(len(rows), MIXED_CAP), replace=False).tolist()):
                texts.append(corpus.train_texts[i])
                labels.append(f"{name}:{c}")
    return ClassificationCorpus("20ng+r52", texts, np.asarray(labels), [], np.asarray([], dtype=str))


def write_training_tsv(path: Path, texts, labels, first_words: int | None = None) -> int:
    """A study's TSV (``text``, ``label``) of ``texts``, whitespace runs (tabs and newlines among them) made
    single spaces; with ``first_words``, each text cut to its first that many words and the rows left with
    fewer than 3 words left out. Returns how many were left out."""
    words = [str(t).split()[:first_words] for t in texts]
    keep = [i for i, w in enumerate(words) if first_words is None or len(w) >= 3]
    rows = [f"{' '.join(words[i])}\t{labels[i]}" for i in keep]
    path.write_text("\n".join(["text\tlabel", *rows]) + "\n")
    return len(words) - len(keep)


def dev_study(
    run: tuple,
    methods: list[str],
    seed: int,
    quick: bool,
    study_class=None,
    gpc_objective="evidence",
    unlabeled_texts="all",
    unlabeled_words="none",
):
    """The open-set study of one of :func:`dev_runs`' corpora on its training part (``study_class``: an
    ``OpenSetStudy`` or a subclass; ``gpc_objective``, ``unlabeled_texts`` and ``unlabeled_words``: the study's
    options)."""
    if study_class is None:
        from lvgp.experiments.open_set import OpenSetStudy as study_class
    _, path, unknown, sizes, splits, dev_size = run
    return study_class(
        dataset=path,
        unknown_classes=unknown,
        per_class=sizes,
        splits=splits,
        methods=tuple(methods),
        test_size=dev_size or None,  # 0: every dev document
        ldk_max_iter=5 if quick else 50,
        seed=seed,
        gpc_objective=gpc_objective,
        unlabeled_texts=unlabeled_texts,
        unlabeled_words=unlabeled_words,
    )


def whole_bag_vocabulary(labelled: list[str], scored: list[str], words=None):
    """The GP's word list of the whole-bag emulation: ``words`` (the GP's own unfitted
    :class:`~lvgp.Vocabulary`, its tokens and stop words; default the library's, which cuts no word by its
    frequency) fitted on the labelled and the scored texts. The GP's idf stays that of its training
    documents, so a word of the scored texts alone weighs the largest idf, and it meets no training
    document: only the scored text's norm sees it."""
    import copy

    from lvgp import Vocabulary

    vocabulary = Vocabulary() if words is None else copy.deepcopy(words)  # (fitted anew below)
    return vocabulary.fit(list(labelled) + list(scored))


#: ``--encoder-weight``'s choices (:func:`variant_study`)
ENCODER_WEIGHTS = ("study", "fitted", "fixed", "fixed-unit", "loo", "loo-guarded", "loo-long")


def leave_one_out_weight_classifier(model, guarded: bool = False):
    """``model`` (an unfitted study GP, the evidence's weight) whose ``fit`` ends with the library's
    :func:`~lvgp.models.gpc.encoder_weight.select_encoder_weight` (``--encoder-weight loo``: the least tempered
    leave-one-out log loss, unguarded; ``loo-guarded``: ``guarded=True``, on texts of any length)."""
    from lvgp.models.gpc.encoder_weight import select_encoder_weight

    class LeaveOneOutWeightGPC(type(model)):
        def fit(self, X, y):
            super().fit(X, y)
            self.encoder_weight_factor_ = select_encoder_weight(self, guarded=guarded)[0]
            return self

    return LeaveOneOutWeightGPC(**model.get_params(deep=False))


def _study_encoder_options(method: str) -> dict:
    """The study's own ``fit_weights`` and ``lengthscale`` of a tf-idf GP's encoder part."""
    from lvgp.experiments import open_set

    if method == "gpc-bow-encoder-rbf":
        return {"fit_weights": open_set.FIT_ENCODER_WEIGHT, "lengthscale": open_set.ENCODER_RBF_LENGTHSCALE}
    return {"fit_weights": True, "lengthscale": None}


def gp_vocabulary(name: str):
    """``--gp-vocabulary``'s unfitted words of the tf-idf GPs: ``"negations"`` scikit-learn's stop words but the
    negations, tokens of two letters or more (gp_vocabulary_dev.py's), ``"two-letters"`` the study's with tokens of
    two letters (the study's own since rule 27), ``"study"`` none (each method's own)."""
    from lvgp.bow.vocabulary import ENGLISH_STOP_WORDS_BUT_NEGATIONS, Vocabulary

    if name == "negations":
        return Vocabulary(stop_words=sorted(ENGLISH_STOP_WORDS_BUT_NEGATIONS), min_token_len=2)
    return Vocabulary(min_token_len=2) if name == "two-letters" else None


#: the GP methods with a tf-idf part: their encoder part (None: the tf-idf cosine alone)
_TFIDF_GPS = {"gpc-bow": None, "gpc-bow-encoder": "cosine", "gpc-bow-encoder-rbf": "rbf"}
#: ``variant_study(noise_prior_sd=)``'s default: the GP classifiers' own ``noise_prior_sd``
LIBRARY = "library"


def noise_prior_sd_argument(text: str) -> float | None:
    """``--noise-prior-sd``'s value: ``"none"`` (no prior) or a positive number (``ValueError`` otherwise)."""
    if text.strip().lower() == "none":
        return None
    value = float(text)
    if not (value > 0 and np.isfinite(value)):
        raise ValueError(f"--noise-prior-sd must be a positive number or 'none'; got {text!r}")
    return value


#: ``--encoder-part`` values that stand for several encoder parts, each with its own weight
_ENCODER_PARTS = {"cosine-rbf": ("cosine", "rbf")}


def variant_study(
    whole_bag: bool = True,
    sublinear_tf: bool | None = None,
    encoder_weight: str = "study",
    encoder_part: str = "study",
    alpha_epsilon: float | None = None,
    vocabulary: str = "study",
    noise_prior_sd: float | str | None = LIBRARY,
    gpc_inference: str = "dirichlet",
):
    """``OpenSetStudy`` whose GP classifiers read :func:`whole_bag_vocabulary` of each split (``whole_bag``)
    and whose tf-idf parts count words as ``1 + ln count`` (``sublinear_tf=True``) or as their counts
    (``False``); ``None`` keeps each method's own. ``encoder_weight`` (:data:`ENCODER_WEIGHTS`): the tf-idf GPs'
    encoder parts as the study builds them (``"study"``), their weight and length-scale fitted by the evidence
    (``"fitted"``), the weight held where both parts weigh alike (``"fixed"``), and the RBF's length-scale held
    at 1 too (``"fixed-unit"``; ``beside_encoder(fit_weights=False, lengthscale=1.0)``). ``encoder_part``: the
    stationary GP's (``gpc-bow-encoder-rbf``'s) encoder part as the study builds it (``"study"``, the RBF) or another
    of :data:`lvgp.kernels.packed.STATIONARY_ENCODER_KERNELS` (``"matern"``: 5/2) in its place, everything else as
    the study's. ``alpha_epsilon``: the GP classifiers' Dirichlet pseudo-count in place of the study's (``None``: the
    study's). ``vocabulary``: the tf-idf GPs' words (:func:`gp_vocabulary`). ``noise_prior_sd``: the GP
    classifiers' ``noise_prior_sd`` (a positive number, or ``None``: no prior) in place of the library's
    (:data:`LIBRARY`, the default). ``gpc_inference``: the GP classifiers' inference (the study's
    ``with_gpc_inference``); under another than the Dirichlet one they are scored by the energy, their encoder
    weight the fit's own."""
    import dataclasses
    import functools

    from lvgp.encoders import resolve_encoder
    from lvgp.experiments.open_set import (
        GPC_BOW_SUBLINEAR_TF,
        OpenSetStudy,
        _bag_of_words_beside_encoder,
        _tfidf_cosine,
    )

    @dataclasses.dataclass(frozen=True)
    class VariantStudy(OpenSetStudy):
        def estimator(self, cell: dict, data=None):
            model = super().estimator(cell, data)
            if gpc_inference != "dirichlet" and cell["method"].startswith("gpc-"):
                # the Dirichlet reference scores and the labels' leave-one-out weight need the Dirichlet inference
                model.set_params(novelty_score="energy", encoder_weight="evidence")
            if alpha_epsilon is not None and cell["method"].startswith("gpc-"):
                model.set_params(alpha_epsilon=alpha_epsilon)
            if noise_prior_sd is not LIBRARY and cell["method"].startswith("gpc-"):
                model.set_params(noise_prior_sd=noise_prior_sd)
            words = gp_vocabulary(vocabulary)
            if words is not None and cell["method"] in _TFIDF_GPS:
                model.set_params(vocabulary=words)
            if whole_bag and cell["method"].startswith("gpc-"):
                split = self.split(cell["split"])
                labelled, _ = split.training(cell["params"]["per_class"])
                words = model.get_params()["vocabulary"]  # the GP's own tokens (the study's two-letter ones)
                model.set_params(vocabulary=whole_bag_vocabulary(labelled, split.test_texts, words))
            other_part = encoder_part != "study" and cell["method"] == "gpc-bow-encoder-rbf"
            if (sublinear_tf is not None or encoder_weight != "study" or other_part) and cell["method"] in _TFIDF_GPS:
                part = _ENCODER_PARTS.get(encoder_part, encoder_part) if other_part else _TFIDF_GPS[cell["method"]]
                if other_part and encoder_part in WHITENED_PARTS:
                    labelled, labels = self.split(cell["split"]).training(cell["params"]["per_class"])
                    vectors = np.asarray(resolve_encoder(self.encoder, self.device).encode(labelled))
                    part = whitened_rbf_part(whitening_map(vectors, labels, within=encoder_part == "within-rbf"))
                counts = bool(sublinear_tf)  # (None: the encoder GPs' own, raw counts)
                if part is None:
                    kernel = functools.partial(
                        _tfidf_cosine, sublinear_tf=GPC_BOW_SUBLINEAR_TF if sublinear_tf is None else counts
                    )
                else:
                    dim = resolve_encoder(self.encoder, self.device).dim
                    if encoder_weight == "study":
                        held = _study_encoder_options(cell["method"])
                    else:
                        held = {
                            "fit_weights": encoder_weight in ("fitted", "loo", "loo-guarded", "loo-long"),
                            "lengthscale": 1.0 if encoder_weight == "fixed-unit" else None,
                        }
                    kernel = _bag_of_words_beside_encoder(part, sublinear_tf=counts, **held)(dim)
                model.set_params(kernel=kernel)
                if encoder_weight != "study" and part is not None:
                    # loo-long: the library's choice (LDKGPClassifier(encoder_weight="loo"), rules 19-20); every other
                    # variant starts from the evidence's weight
                    model.set_params(encoder_weight="loo" if encoder_weight == "loo-long" else "evidence")
                if encoder_weight in ("loo", "loo-guarded") and part is not None:
                    model = leave_one_out_weight_classifier(model, guarded=encoder_weight == "loo-guarded")
            return model

    VariantStudy.gpc_inference = gpc_inference  # what the study's GP builders read (with_gpc_inference)
    return VariantStudy


#: ``--encoder-part`` values whose RBF reads the encoder's unit vectors through a whitening map (:func:`whitening_map`)
WHITENED_PARTS = ("whitened-rbf", "within-rbf")


def whitening_map(vectors: np.ndarray, labels: np.ndarray, within: bool) -> np.ndarray:
    r"""``d x d``: :math:`R` with :math:`R R^\top` the Ledoit-Wolf precision of the labelled texts' unit vectors
    ``vectors`` (``n x d``), centred on their classes' means (``within``: the Mahalanobis detector's shared
    within-class scatter, read off the ``labels``) or on their overall mean (no label read), scaled so that the
    mapped vectors' mean squared distance between labelled texts is the unit vectors' own (the RBF's length-scale
    starts where the study's does)."""
    from sklearn.metrics.pairwise import euclidean_distances

    from lvgp.baselines.encoder import _precision_root, _within_class_scatter

    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    # no label read: one class, centred on the overall mean
    codes = np.unique(labels, return_inverse=True)[1] if within else np.zeros(len(unit), dtype=np.int64)
    _, scatter = _within_class_scatter(unit, codes, int(codes.max()) + 1)
    root = _precision_root(scatter.precision_)
    spread = euclidean_distances(unit, squared=True).mean() / euclidean_distances(unit @ root, squared=True).mean()
    return root * np.sqrt(spread)


def whitened_rbf_part(matrix: np.ndarray):
    """A gpytorch RBF kernel of ``x @ matrix`` (the encoder's normalized vectors mapped; stationary)."""
    import torch
    from gpytorch.kernels import Kernel, RBFKernel

    class _Whitened(Kernel):
        is_stationary = True

        def __init__(self, matrix: torch.Tensor) -> None:
            super().__init__()
            self.base = RBFKernel()
            self.register_buffer("matrix", matrix)

        def forward(self, x1, x2, diag=False, **params):
            m = self.matrix.to(x1.dtype)
            return self.base.forward(x1 @ m, x2 @ m, diag=diag, **params)

    return _Whitened(torch.as_tensor(matrix, dtype=torch.float64))


def _cells(rows: list[dict]) -> list[str]:
    """The in-scope accuracy and every score's AUROC of ``rows`` (one method and size), their means."""
    cells = [f"{np.mean([r['accuracy'] for r in rows]):.3f}"]
    for kind in SCORES:
        values = [r["scores"][kind]["oos_auroc"] for r in rows if kind in r["scores"]]
        mark = "*" if rows[0]["novelty_score"] == kind else ""
        cells.append(f"{np.mean(values):.3f}{mark}" if values else "–")
    return cells


def _means_over_seeds(records: list[dict], seeds: list[int], methods: list[str]) -> None:
    """Every method's scores over all the seeds' draws, and the GP classifiers' scores averaged over
    the corpora, sizes and GP methods: the figure a choice of the GP's score is made on."""
    print(f"\nseeds {','.join(map(str, seeds))}: every draw\n\n{_HEADER}")
    gp: dict[str, list[float]] = {}
    for corpus in dict.fromkeys(r["corpus"] for r in records):
        for n in sorted({r["per_class"] for r in records if r["corpus"] == corpus}):
            for m in methods:
                rows = [r for r in records if r["corpus"] == corpus and r["method"] == m and r["per_class"] == n]
                if not rows:
                    continue
                print(f"| {corpus} | {n} | {m} | " + " | ".join(_cells(rows)) + " |")
                if m.startswith("gpc-"):
                    for kind in rows[0]["scores"]:
                        gp.setdefault(kind, []).append(float(np.mean([r["scores"][kind]["oos_auroc"] for r in rows])))
    if gp:
        print(
            "\nThe GP classifiers' scores, mean AUROC over every (corpus, size, GP method): "
            + ", ".join(
                f"{kind} {np.mean(values):.4f}" for kind, values in sorted(gp.items(), key=lambda kv: -np.mean(kv[1]))
            )
        )


#: the baselines each method is compared with draw by draw (:func:`paired_against`): logistic regression in
#: in-scope accuracy, the Mahalanobis detector (ahead of the GP on 20ng's test split) in its own score's AUROC
PAIRED_BASELINES = {"accuracy": "tfidf-encoder-logreg", "oos_auroc": "encoder-mahalanobis"}
_PAIRED_WHAT = {"accuracy": "In-scope accuracy", "oos_auroc": "AUROC of each method's own score"}


def paired_against(records: list[dict], baseline: str, key: str = "accuracy") -> str:
    """A table of each method's ``key`` (``"accuracy"``, or ``"oos_auroc"``: its own score's) minus
    ``baseline``'s on the same draw (corpus, seed, split, size): the mean difference, its standard deviation
    over the draws, and in how many draws the method is ahead. ``records``: the runs' records, each with its
    ``corpus`` and ``seed``."""
    theirs = {
        (r["corpus"], r.get("seed"), r["split"], r["per_class"]): r[key] for r in records if r["method"] == baseline
    }
    lines = [
        f"\n{_PAIRED_WHAT[key]} minus {baseline}'s, draw by draw\n",
        f"| corpus | labelled a class | method | {key} | difference | sd | draws ahead |",
        "|---|---|---|---|---|---|---|",
    ]
    for corpus, n, m, rows in _method_cells(records):
        paired = [(r[key], theirs.get((corpus, r.get("seed"), r["split"], n))) for r in rows]
        diffs = np.array([a - b for a, b in paired if b is not None])
        if m == baseline or not len(diffs):
            continue
        lines.append(
            f"| {corpus} | {n} | {m} | {np.mean([a for a, _ in paired]):.4f} | {difference_cells(diffs)} of "
            f"{len(diffs)} |"
        )
    return "\n".join(lines)


def _method_cells(records: list[dict]):
    """Each (corpus, size, method) of ``records`` with its records, corpora and methods in the order they first
    appear and sizes ascending; cells without a record left out."""
    for corpus in dict.fromkeys(r["corpus"] for r in records):
        for n in sorted({r["per_class"] for r in records if r["corpus"] == corpus}):
            for m in dict.fromkeys(r["method"] for r in records):
                rows = [r for r in records if (r["corpus"], r["per_class"], r["method"]) == (corpus, n, m)]
                if rows:
                    yield corpus, n, m, rows


def paired_with_run(records: list[dict], other: Path, seeds: list[int]) -> str:
    """Each method of this run against the same method of the run saved in ``other`` (its ``--out``: the same
    corpora, seeds and sizes, another variant), draw by draw: in-scope accuracy and own score's AUROC, this run's
    minus the other's (:func:`paired_against`)."""
    tables = []
    for m in dict.fromkeys(r["method"] for r in records):
        theirs = f"{m} ({other.name})"
        both = [r for r in records if r["method"] == m]
        for corpus in dict.fromkeys(r["corpus"] for r in both):
            for seed in seeds:
                folder = other if len(seeds) == 1 else other / f"seed{seed}"
                saved = json.loads((folder / f"{corpus}.json").read_text())
                both += [{**r, "method": theirs, "corpus": corpus, "seed": seed} for r in saved if r["method"] == m]
        for key in PAIRED_BASELINES:
            tables.append(paired_against(both, theirs, key))
    return "\n".join(tables)


def paired_scores(records: list[dict], first: str, second: str) -> str:
    """A table of each GP method's AUROC under the novelty score ``second`` minus under ``first``, draw by draw
    (the same fit: one record holds every score's), per corpus and size: the mean difference, its standard deviation
    over the draws, and in how many draws ``second`` is ahead."""
    lines = [
        f"\nAUROC of {second} minus {first}, draw by draw (the same fits)\n",
        f"| corpus | labelled a class | method | {first} | {second} | difference | sd | draws ahead |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for corpus, n, m, rows in _method_cells(records):
        rows = [r for r in rows if first in r["scores"] and second in r["scores"]]
        if not rows:
            continue
        a = np.array([r["scores"][first]["oos_auroc"] for r in rows])
        b = np.array([r["scores"][second]["oos_auroc"] for r in rows])
        lines.append(
            f"| {corpus} | {n} | {m} | {a.mean():.4f} | {b.mean():.4f} | {difference_cells(b - a)} of {len(rows)} |"
        )
    return "\n".join(lines)


def difference_cells(diffs: np.ndarray) -> str:
    """The cells of a draw-by-draw comparison: the mean difference, its standard deviation over the draws
    (``–`` for one draw) and the number of draws where it is positive."""
    sd = f"{diffs.std(ddof=1):.4f}" if len(diffs) > 1 else "–"
    return f"{diffs.mean():+.4f} | {sd} | {int((diffs > 0).sum())}"


#: the columns of every table this script prints: every score a method of the study offers
SCORES = NOVELTY_SCORE_NAMES
#: the head of every table this script prints
_HEADER = (
    "| corpus | labelled a class | method | accuracy | "
    + " | ".join(SCORES)
    + " |\n|---|---|---|---|"
    + "---|" * len(SCORES)
)

if __name__ == "__main__":
    main()
