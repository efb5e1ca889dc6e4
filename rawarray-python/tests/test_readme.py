"""The Python blocks of the README's "From Python" section run as written, in a scratch folder."""

import os
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks():
    section = README.read_text().split("## From Python", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_python_blocks_run(tmp_path, monkeypatch):
    blocks = python_blocks()
    assert blocks, "the README has a Python block in its From Python section"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    assert os.path.exists("field.ra") and os.path.exists("run.ra")
