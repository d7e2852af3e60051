"""The template's own tests: the plugin is found and its definition is valid."""

from nullius_core.catalogue.checks import check_file


def test_benchmark_is_in_the_catalogue(nullius_session):
    session = nullius_session()
    entry = session.catalogue.get("benchmark", "example-arith")
    assert entry is not None, "is nullius-bench-example installed?"
    assert entry.origin == "example-bench"


def test_definition_checks_clean(nullius_session):
    session = nullius_session()
    entry = session.catalogue.get("benchmark", "example-arith")
    ports = {p.name: p for p in session.ports}
    assert check_file(entry.file, ports) == []
