"""The second half of ``make dist``: each built artifact installs into a fresh venv and works.

``python tests/dist_smoke.py DIST_DIR`` takes the one wheel and the one sdist
in DIST_DIR, installs each (with its dependencies, as a user would) into a
virtual environment of its own made in a temporary folder, and runs a script
there in isolated mode (``-I``, so nothing of this checkout is importable):
the package imports, says the version the artifact's name carries, each
version module parses a message and writes it back unchanged, and the
installed metadata carries the SPDX license with the LICENSE file.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import venv
from pathlib import Path

SMOKE = r"""
import json, sys
import acp_types
assert acp_types.__version__ == sys.argv[1], (acp_types.__version__, sys.argv[1])
for name in acp_types.VERSIONS:
    module = __import__(f"acp_types.{name}", fromlist=["parse_message"])
    line = '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}'
    message = module.parse_message(line)
    assert message.to_wire() == json.loads(line), (name, message.to_wire())
from importlib import metadata
meta = metadata.metadata("acp-types")
assert meta["License-Expression"] == "Apache-2.0", meta["License-Expression"]  # PEP 639, not the old table
assert any(str(f).endswith("licenses/LICENSE") for f in metadata.files("acp-types") or ()), "LICENSE not shipped"
print("ok", acp_types.__version__, *acp_types.VERSIONS)
"""


def _version_of(artifact: Path) -> str:
    # acp_types-1.2.3-py3-none-any.whl, acp_types-1.2.3.tar.gz
    stem = artifact.name.removesuffix(".tar.gz").removesuffix(".whl")
    return stem.split("-")[1]


def smoke(artifact: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="acp-types-dist-") as tmp:
        env_dir = Path(tmp) / "venv"
        venv.create(env_dir, with_pip=True)
        python = str(env_dir / "bin" / "python")
        subprocess.run(
            [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(artifact)],
            check=True,
            cwd=tmp,
        )
        done = subprocess.run(
            [python, "-I", "-c", SMOKE, _version_of(artifact)], cwd=tmp, capture_output=True, text=True
        )
        if done.returncode != 0:
            sys.exit(f"{artifact.name}: the smoke test failed in a fresh venv:\n{done.stderr}")
        print(f"{artifact.name}: {done.stdout.strip()}")


def main(dist: Path) -> None:
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        sys.exit(f"{dist}: expected one wheel and one sdist, found {[p.name for p in wheels + sdists]}")
    for artifact in (*wheels, *sdists):
        smoke(artifact)


if __name__ == "__main__":
    # absolute: each artifact is installed from inside a temporary folder
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "dist").resolve())
