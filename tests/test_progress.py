"""Progress bars (issue 27): silent with ``verbose=False``, at most one redraw a second when
standard error is not a terminal, and shown by every long fit when asked for."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from lvgp import Adam, GPLVSMRegressor, MiniBatch, SparseGPLVSMRegressor
from lvgp.base.progress import LOG_INTERVAL, progress_bar

TEXTS = ["good movie great", "bad film awful", "great acting good", "awful plot bad", "fine good film", "bad bad"]
Y = np.arange(6.0)


def test_bars_redraw_once_a_second_in_logs_and_are_off_unless_verbose(capsys):
    bar = progress_bar(total=3, desc="x")  # pytest's captured stderr is not a terminal
    assert bar.mininterval == LOG_INTERVAL >= 1.0
    bar.close()
    off = progress_bar(range(3), verbose=False)
    assert off.disable and list(off) == [0, 1, 2]


@pytest.mark.parametrize(
    "make",
    [
        lambda v: GPLVSMRegressor(optimizer=Adam(max_iter=3), verbose=v),
        lambda v: SparseGPLVSMRegressor(optimizer=MiniBatch(max_steps=3), verbose=v),
    ],
)
def test_fits_are_silent_unless_verbose(make, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make(False).fit(TEXTS, Y)
        quiet = capsys.readouterr()
        make(True).fit(TEXTS, Y)
        loud = capsys.readouterr()
    assert quiet.out == quiet.err == ""
    assert "it/s" in loud.err or "s/it" in loud.err or "|" in loud.err


ENCODING_ESTIMATORS = [
    "LDKGPClassifier",
    "GPLVSMRegressor",
    "EncoderLogisticRegression",
    "EncoderMahalanobis",
    "EncoderNearestNeighbor",
    "EncoderRidge",
    "EncoderGPRegressor",
]


def _encoding_estimator(name):
    """``(make(encoder, verbose), targets)`` of the estimator ``name`` (:data:`ENCODING_ESTIMATORS`): every
    estimator that encodes texts."""
    from lvgp import LBFGS, LDKGPClassifier
    from lvgp.baselines.encoder import (
        EncoderGPRegressor,
        EncoderLogisticRegression,
        EncoderMahalanobis,
        EncoderNearestNeighbor,
        EncoderRidge,
    )

    labels = ["pos", "neg", "pos", "neg", "pos", "neg"]
    return {
        "LDKGPClassifier": (
            lambda e, v: LDKGPClassifier(sentence_encoder=e, optimizer=LBFGS(max_iter=2), verbose=v),
            labels,
        ),
        "GPLVSMRegressor": (lambda e, v: GPLVSMRegressor(sentence_encoder=e, optimizer=Adam(max_iter=2), verbose=v), Y),
        "EncoderLogisticRegression": (lambda e, v: EncoderLogisticRegression(e, tfidf=True, verbose=v), labels),
        "EncoderMahalanobis": (lambda e, v: EncoderMahalanobis(e, verbose=v), labels),
        "EncoderNearestNeighbor": (lambda e, v: EncoderNearestNeighbor(e, verbose=v), labels),
        "EncoderRidge": (lambda e, v: EncoderRidge(e, cv=2, verbose=v), Y),
        "EncoderGPRegressor": (lambda e, v: EncoderGPRegressor(e, optimizer=LBFGS(max_iter=2), verbose=v), Y),
    }[name]


@pytest.mark.parametrize("name", ENCODING_ESTIMATORS)
def test_a_verbose_fit_shows_the_encoding_of_the_texts_the_cache_lacks(name, tiny_encoder, capsys):
    """The encoder's batches are a first fit's longest wait (a study's corpus: minutes on a thread).
    ``verbose=True`` shows them (beside the fit's own bar, where it has one), and no encoding bar where the
    cache holds every text; ``verbose=False`` shows nothing. Every estimator that encodes texts, the
    baselines on the encoder's vectors included."""
    make, targets = _encoding_estimator(name)
    encoder = tiny_encoder(None, 0)

    def fit(texts, verbose):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make(encoder, verbose).fit(texts, targets)
        return capsys.readouterr().err

    bar = f"encoding ({encoder.name})"
    assert fit(TEXTS, False) == ""  # the texts encoded into the cache, silently
    assert bar not in fit(TEXTS, True)  # all cached: no encoding bar
    assert bar in fit([t + " again" for t in TEXTS], True)  # new texts: their batches shown


def test_short_warning_format_is_one_line_without_paths(capsys):
    import warnings

    import lvgp.warnings as lvgp_warnings

    original = warnings.formatwarning
    try:
        lvgp_warnings.use_short_format()
        text = warnings.formatwarning("3 of 10 words unseen", lvgp_warnings.UnseenWordsWarning, "/some/file.py", 12)
    finally:
        warnings.formatwarning = original
    assert text == "UnseenWordsWarning: 3 of 10 words unseen\n"


def test_the_short_format_of_a_block_is_undone_on_leaving_it():
    import warnings

    import lvgp.warnings as lvgp_warnings

    original = warnings.formatwarning
    with lvgp_warnings.short_format("lvgp: "):
        text = warnings.formatwarning("3 of 10 words unseen", lvgp_warnings.UnseenWordsWarning, "/some/file.py", 12)
    assert text == "lvgp: UnseenWordsWarning: 3 of 10 words unseen\n"
    assert warnings.formatwarning is original
    with pytest.raises(KeyError), lvgp_warnings.short_format():
        raise KeyError("out of the block by an exception")
    assert warnings.formatwarning is original


def test_the_command_shows_a_warning_on_one_line_after_its_name(tmp_path):
    """``lvgp ...`` prints its warnings as its errors, ``lvgp: Category: message``, not after the
    frame the warning was attributed to (``<frozen runpy>:88:`` under ``python -m lvgp``)."""
    from tests._forked_run import run_script

    rows = [(f"{w} {w} text {i}", c) for c, w in [("a", "apple"), ("b", "boat"), ("c", "cat")] for i in range(12)]
    rows += [(f"dog {i}", "d") for i in range(4)]  # a known class of 4 texts, fewer than --per-class 6
    data = tmp_path / "toy.tsv"
    data.write_text("\n".join(["text\tlabel", *(f"{t}\t{label}" for t, label in rows)]) + "\n")
    argv = ["compare", "open-set", "--dataset", str(data), "--unknown-label", "c", "--per-class", "6"]
    argv += ["--splits", "1", "--methods", "svm", "--out", str(tmp_path / "o"), "--quiet"]
    # the command's own process (pytest records the warnings of its own): `python -m lvgp ARGS` as a user runs it
    script = tmp_path / "lvgp_command.py"
    script.write_text("from lvgp.experiments.cli import main\n\nraise SystemExit(main())\n")
    out = run_script(script, argv, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [line for line in out.stderr.splitlines() if "Warning:" in line]
    assert lines and all(line.startswith("lvgp: ") for line in lines), lines
    assert "lvgp: UserWarning: 1 known class has fewer training texts than --per-class 6" in lines[0], lines


@pytest.mark.parametrize("method", ["adam", "lbfgs", "stochastic"])
def test_a_fit_logging_to_a_file_redraws_at_most_once_a_second(method, capsys):
    """The loss in the bar's postfix must not force a redraw per iteration (tqdm's
    ``set_postfix`` refreshes unless told not to): a log gets about a line a second."""
    import time

    import torch

    from lvgp.base.fitting import BestOfWindowStopping, fit_adam, fit_stochastic, minimize

    x = torch.nn.Parameter(torch.full((50,), 3.0, dtype=torch.float64))
    start = time.perf_counter()
    if method == "stochastic":
        fit_stochastic(
            lambda i: torch.tensor(1.0 / (i + 1)),
            max_iter=400,
            rule=None,
            what="t",
            warn=False,
            read_every=1,
            verbose=True,
        )
    elif method == "adam":
        objective = lambda: ((x - 1) ** 4).sum() + 1e-3 * (x**2).sum()  # noqa: E731
        fit_adam([x], objective, lr=0.01, max_iter=400, rule=BestOfWindowStopping(10, 0.0), warn=False, verbose=True)
    else:
        objective = lambda: ((x - 1) ** 4).sum() + 1e-3 * (x**2).sum()  # noqa: E731
        minimize([x], objective, max_iter=400, tol=0.0, verbose=True)
    seconds = time.perf_counter() - start
    redraws = capsys.readouterr().err.count("\r")
    assert redraws <= seconds / LOG_INTERVAL + 4, (redraws, seconds)
