"""The committed studies (``results/<kind>/<folder>/``) are what their records give: each ``table.md`` is the
table its study writes from its ``results.json`` (``Study.report`` without ``cells/``), so that a record replaced
or a table edited by hand cannot leave the two apart (results/README.md quotes the tables; the records are the
measurement). Reads no data set and runs no cell: about a second for every folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from lvgp.experiments.study import load_study

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = sorted(p.parent for p in (ROOT / "results").glob("*/*/study.json") if (p.parent / "results.json").exists())


def test_the_committed_studies_are_found():
    kinds = {folder.parent.name for folder in FOLDERS}
    assert {"active", "classification", "open-set", "regression"} <= kinds, kinds


@pytest.mark.parametrize("folder", FOLDERS, ids=[f"{p.parent.name}/{p.name}" for p in FOLDERS])
def test_a_committed_table_is_its_records_table(folder):
    study = load_study(folder)
    records = study.committed_records(folder)
    table = study.table(records) if records else "no finished cells\n"
    assert table == (folder / "table.md").read_text(), (
        f"{folder.relative_to(ROOT)}/table.md is not what its results.json gives: write it again with "
        f"`lvgp compare {study.kind} --out {folder.relative_to(ROOT)} --report-only`"
    )
