"""The State service's RPC security on real executor JVMs (local-cluster[2,1,1024]), through the
executors' own server path: with spark.authenticate on, a client without the application's secret
(a wrong one, or none) is refused by an executor's host endpoint at the address the State's route
publishes, and the same client with the secret is answered; with spark.authenticate off, creating a
State fails naming the fix unless spark.sharedstate.rpc.allowUnauthenticated is set, which serves
with a logged warning.

One subprocess (it/apps/security_app.py) runs the three short applications.
"""

from __future__ import annotations

import pytest

from cluster_apps import run_cluster_app

OPT_IN = "spark.sharedstate.rpc.allowUnauthenticated"


@pytest.fixture(scope="module")
def security_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("security")
    return out, run_cluster_app("security_app.py", out, timeout=900)


@pytest.mark.slow
def test_executor_host_refuses_a_client_without_the_secret_and_answers_one_with_it(security_run):
    _, records = security_run
    assert "driver" not in records["auth_hosts"] and len(set(records["auth_hosts"])) == 2, records["auth_hosts"]
    assert records["right_secret"] == ["answered", "answered"], records["right_secret"]
    for case in ("wrong_secret", "no_secret"):
        answers = records[case]
        assert len(answers) == 2 and all(a.startswith("refused: ") for a in answers), (case, answers)
    assert all("SaslMessage" in a for a in records["no_secret"]), records["no_secret"]


@pytest.mark.slow
def test_without_authentication_creating_a_state_fails_naming_the_fix(security_run):
    _, records = security_run
    error = records["off_error"]
    assert error is not None, "a State was created on a cluster without spark.authenticate"
    assert "spark.authenticate=true" in error and f"{OPT_IN}=true" in error, error


@pytest.mark.slow
def test_the_opt_in_serves_without_authentication_with_a_warning(security_run):
    out, records = security_run
    assert "driver" not in records["optin_hosts"] and len(set(records["optin_hosts"])) == 2, records["optin_hosts"]
    assert records["optin_updates"] == 3
    log = (out / "app.stderr").read_text()
    assert f"spark.authenticate off ({OPT_IN}=true)" in log, log[-3000:]
