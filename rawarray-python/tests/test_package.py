"""The package as pip sees it: its version, and its extras (one per integration, and ``all``)."""

import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import rawarray

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# The versions the tests run with, pinned (tests/python/requirements.txt of the repository).
REQUIREMENTS = [Requirement(line.split("#")[0].strip()) for line in
                (ROOT.parent / "tests" / "python" / "requirements.txt").read_text().splitlines()
                if line.split("#")[0].strip()]
PINS = {canonicalize_name(r.name): str(r.specifier).removeprefix("==") for r in REQUIREMENTS}

# The integrations the docs use, each an extra.
INTEGRATIONS = {"bfloat16", "dask", "distributed", "xarray", "mpi", "arrow", "pandas", "polars",
                "duckdb"}


def test_the_version_is_the_packages_metadata_and_pyprojects():
    assert rawarray.__version__ == importlib.metadata.version("rawarray")
    assert rawarray.__version__ == PYPROJECT["project"]["version"]
    assert "__version__" not in rawarray.__all__


def test_each_integration_has_an_extra_of_requirements_pip_parses():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert set(extras) == INTEGRATIONS | {"all"}
    for name in INTEGRATIONS:
        for req in map(Requirement, extras[name]):
            # Each names a lower bound that the tests' pinned version satisfies.
            pinned = PINS[canonicalize_name(req.name)]
            assert req.specifier.contains(pinned), (name, str(req), pinned)


def test_all_is_every_extra():
    extras = PYPROJECT["project"]["optional-dependencies"]
    (req,) = map(Requirement, extras["all"])
    assert canonicalize_name(req.name) == canonicalize_name(PYPROJECT["project"]["name"])
    assert req.extras == INTEGRATIONS
    # As installed: pip's metadata says the same.
    meta = importlib.metadata.metadata("rawarray")
    assert set(meta.get_all("Provides-Extra")) == INTEGRATIONS | {"all"}
    requires = [Requirement(r) for r in importlib.metadata.requires("rawarray")]
    in_all = [r for r in requires if r.marker and r.marker.evaluate({"extra": "all"})
              and not r.marker.evaluate({"extra": ""})]
    assert {canonicalize_name(r.name) for r in in_all} == {"rawarray"}
    assert in_all[0].extras == INTEGRATIONS


@pytest.mark.parametrize("extra,module", [("arrow", "pyarrow"), ("polars", "polars"),
                                          ("duckdb", "duckdb"), ("pandas", "pandas"),
                                          ("xarray", "xarray"), ("dask", "dask")])
def test_each_extra_brings_the_module_its_integration_imports(extra, module):
    names = {canonicalize_name(Requirement(r).name)
             for r in PYPROJECT["project"]["optional-dependencies"][extra]}
    assert canonicalize_name(module) in names


def test_the_front_pages_install_sections_name_every_extra():
    # Both READMEs a user installs from: the repository's front page and the package's own.
    for readme in (ROOT.parent / "README.md", ROOT / "README.md"):
        text = readme.read_text()
        install = text[text.index("## Install"):]
        install = install[:install.index("\n## ", 1)]
        for extra in INTEGRATIONS | {"all"}:
            assert f"[{extra}]" in install or f"`{extra}`" in install, (readme.name, extra)
