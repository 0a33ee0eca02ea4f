"""tracking/script_writes.py's accounting: a value in the job's run is the script's own when the record of its
writes holds it (key, step and value), once per write. The record made by a real script process against a
real MLflow store: tests/e2e/test_script_writes_mlflow.py."""
from collections import Counter

from bakeoff_runtime.tracking.script_writes import own_values


def test_a_record_of_another_run_accounts_for_nothing_here():
    record = Counter({("val_loss", 1, "0.5"): 1})
    own, foreign = own_values({"val_loss": [(1, 0.5), (1, 0.5)]}, record)
    assert own == {"val_loss": [0.5]} and foreign == {"val_loss": 1}  # the same value twice: once its own


def test_a_write_whose_value_the_script_could_not_record_is_matched_by_key_and_step():
    own, foreign = own_values({"loss": [(3, 0.7), (4, 0.8)]}, Counter({("loss", 3, None): 1}))
    assert own == {"loss": [0.7]} and foreign == {"loss": 1}


def test_infinity_as_the_sql_store_keeps_it_is_the_scripts_own():
    import sys

    own, foreign = own_values({"acc": [(1, sys.float_info.max), (2, float("nan"))]},
                              Counter({("acc", 1, "inf"): 1, ("acc", 2, "nan"): 1}))
    assert len(own["acc"]) == 2 and not foreign
