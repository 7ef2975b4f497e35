"""Partial States with their partitions on two real executor JVMs (local-cluster[2,1,1024],
spark.authenticate on): the online-learning application (it/apps/cluster_partial_app.py) checked
against the sequential oracle of the local tests (sharedstate.testing.learning)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cluster_apps import run_cluster_app
from sharedstate.testing.learning import ModelOracle, make_learning

SEED = 41


@pytest.fixture(scope="module")
def partial_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cluster-partial")
    return out, run_cluster_app("cluster_partial_app.py", out, str(SEED))


def _weights(frame: pd.DataFrame) -> dict[int, list[float] | None]:
    return {int(i): (None if w is None else [float(x) for x in w]) for i, w in zip(frame["ev_id"], frame["w"])}


@pytest.mark.slow
def test_merged_and_local_models_on_two_executors_equal_the_oracle(partial_run):
    out, records = partial_run
    work = make_learning(SEED, models=6)
    hosts = records["hosts"]
    assert len(hosts) == 2 and len(set(hosts)) == 2 and "driver" not in hosts, hosts
    owners = pd.read_pickle(out / "key_partitions.pkl")
    assert owners["partition"].nunique() == 2, "the models live on both executors"
    assert records["updates_rejected"] == 0
    oracle = ModelOracle(work.examples)
    scored = pd.read_pickle(out / "scored.pkl")
    assert scored["ev_id"].is_unique
    assert _weights(scored) == {int(e.ev_id): oracle.weights(e.model, e.ts) for e in work.events.itertuples()}
    local = pd.read_pickle(out / "local.pkl")
    glob = _weights(scored)
    for ev, part in local.groupby("ev_id"):
        instances = [list(w) for w in part["w"] if w is not None]
        assert ([float(x) for x in np.sum(instances, axis=0)] if instances else None) == glob[int(ev)], ev
