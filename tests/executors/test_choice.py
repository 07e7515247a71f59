"""`--executor` and `--address` parsed and checked without Ray (harness/executors/choice.py)."""

import pytest

from freshrag.executors.choice import Executor, ExecutorError, executor_of


@pytest.mark.parametrize("kind, address, expected", [
    pytest.param("local", None, Executor("local"), id="local"),
    pytest.param("ray", None, Executor("ray"), id="ray-local-cluster"),
    pytest.param("ray", "auto", Executor("ray", "auto"), id="auto"),
    pytest.param("ray", "ray://head.example:10001", Executor("ray", "ray://head.example:10001"),
                 id="ray-client"),
    pytest.param("ray", "10.0.0.5:6379", Executor("ray", "10.0.0.5:6379"), id="gcs"),
])
def test_an_executor_and_its_address_are_read(kind, address, expected):
    assert executor_of(kind, address) == expected


@pytest.mark.parametrize("kind, address, said", [
    pytest.param("dask", None, "expected one of local, ray", id="unknown-executor"),
    pytest.param("local", "auto", "only the ray executor takes a cluster address", id="local+address"),
    pytest.param("ray", "http://head:8265", "expected ray://HOST:PORT", id="dashboard-url"),
    pytest.param("ray", "ray://head", "expected ray://HOST:PORT", id="no-port"),
    pytest.param("ray", "head:70000", "expected ray://HOST:PORT", id="port-out-of-range"),
    pytest.param("ray", 6379, "expected ray://HOST:PORT", id="not-a-string"),
])
def test_a_wrong_executor_or_address_is_refused_naming_it(kind, address, said):
    with pytest.raises(ExecutorError, match=said):
        executor_of(kind, address)


def test_where_a_cluster_listens_is_read_for_the_check_before_connecting():
    assert executor_of("ray", "ray://head.example:10001").host_port() == ("head.example", 10001)
    assert executor_of("ray", "10.0.0.5:6379").host_port() == ("10.0.0.5", 6379)
    assert executor_of("ray", "auto").host_port() is None
    assert executor_of("ray").host_port() is None
