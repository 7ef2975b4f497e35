"""The DGS synchronisation pattern on fraud detection (sharedstate.demos.fraud): rules are barriers
read from a partial State in global scope; every transaction's check equals the sequential oracle,
at 1 and 2 writer partitions, on out-of-order input."""

from __future__ import annotations

import pandas as pd
import pytest

from sharedstate.demos.fraud import comparable, run
from sharedstate.testing.fraud import fraud_oracle, make_fraud


@pytest.mark.parametrize("partitions", [1, 2])
def test_each_transaction_is_checked_against_the_last_rule_and_the_aggregate_up_to_it(
    spark, workdir, state_name, partitions
):
    work = make_fraud(seed=3 + partitions)
    got = comparable(run(spark, work, workdir, partitions, prefix=state_name))
    expected = comparable(fraud_oracle(work))
    assert got["tx_id"].is_unique
    pd.testing.assert_frame_equal(got, expected)
    # the workload means something: transactions before the first rule, flagged and clean ones
    assert expected["rule_id"].isna().any()
    assert expected["flagged"].fillna(False).any() and not expected["flagged"].fillna(True).all()
