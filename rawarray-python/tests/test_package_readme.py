"""The Python blocks of the package's own README (rawarray-python/README.md) run as written, in a
scratch folder; its shell blocks name the build and install commands that test_package.py and
the wheel job use."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), re.S)


def test_the_package_readme_python_blocks_run(tmp_path, monkeypatch):
    python = blocks("python")
    assert len(python) == 3
    monkeypatch.chdir(tmp_path)
    for block in python:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    assert (tmp_path / "run.ra").exists() and (tmp_path / "field.ra").exists()


def test_the_install_commands_name_the_extras_and_the_wheel_tag():
    sh = "\n".join(blocks("sh"))
    assert 'pip install "rawarray[all]"' in sh and "pip install -v ./rawarray-python" in sh
    assert "maturin build --release --zig --compatibility manylinux_2_28" in sh
    workflow = README.parents[1] / ".github" / "workflows" / "wheels.yml"
    assert 'manylinux: "2_28"' in workflow.read_text()
