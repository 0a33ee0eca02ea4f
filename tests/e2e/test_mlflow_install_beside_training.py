"""A job that logs to MLflow where its image has none installs the client beside its training, not before it
(bakeoff_runtime/tracking/install.py start_install): the training starts at once, and only the job's MLflow client
processes wait for the install (wait_for_install).

The job is launch.py run as a compiled request's container runs it (BAKEOFF_MLFLOW_INSTALL=1, a tracking URI), with
an interpreter that cannot import this environment's mlflow (tests/assets/no_mlflow). The package index is a local
one that holds the pinned client's wheel and answers only once the training script has started: the order is
forced, not timed. With the install before the training (as it was), the script could not start until the index
gave up."""
import base64
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

from conftest import ENTRYPOINTS, ROOT

SCRIPT = """
import json, os, sys, time
from pathlib import Path
marker = os.environ.get("BAKEOFF_MLFLOW_INSTALL_MARKER")
seen = {"marker_env": marker, "installed_at_start": bool(marker) and Path(marker).exists()}
Path(sys.argv[1]).write_text("started")  # the index answers pip only now
deadline = time.time() + 120
while marker and not Path(marker).exists() and time.time() < deadline:
    time.sleep(0.05)
seen["install"] = json.loads(Path(marker).read_text()) if marker and Path(marker).exists() else None
Path(sys.argv[2]).write_text(json.dumps(seen))
"""


def _wheel(directory: Path, name: str, version: str, module: str) -> Path:
    dist = name.replace("-", "_")
    path = directory / f"{dist}-{version}-py3-none-any.whl"
    files = {f"{module}/__init__.py": f"__version__ = {version!r}\n",
             f"{dist}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                   "Tag: py3-none-any\n"}
    record = [f"{arc},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()}"
              f",{len(text.encode())}" for arc, text in files.items()]
    files[f"{dist}-{version}.dist-info/RECORD"] = "\n".join([*record, f"{dist}-{version}.dist-info/RECORD,,"]) + "\n"
    with zipfile.ZipFile(path, "w") as zf:
        for arc, text in files.items():
            zf.writestr(arc, text)
    return path


def _index(wheel: Path, gate: Path) -> http.server.ThreadingHTTPServer:
    """A PEP 503 simple index with one project, which answers only once `gate` exists (at most 120 s)."""
    project = "mlflow-skinny"
    body = wheel.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            deadline = time.time() + 120
            while not gate.exists() and time.time() < deadline:
                time.sleep(0.05)
            if self.path.rstrip("/") == f"/simple/{project}":
                page = f'<a href="/files/{wheel.name}#sha256={hashlib.sha256(body).hexdigest()}">{wheel.name}</a>'
                data, kind = page.encode(), "text/html"
            elif self.path == f"/files/{wheel.name}":
                data, kind = body, "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_the_training_starts_while_the_mlflow_client_is_installed_beside_it(tmp_path):
    pin = next(line.split("==")[1] for line in (ENTRYPOINTS / "bakeoff_runtime" / "tracking" /
                                                "mlflow-requirements.txt").read_text().splitlines()
               if line.startswith("mlflow-skinny=="))
    wheel = _wheel(tmp_path, "mlflow-skinny", pin, "mlflow")
    gate, seen = tmp_path / "started", tmp_path / "seen.json"
    server = _index(wheel, gate)
    code = tmp_path / "code"
    shutil.copytree(ENTRYPOINTS, code, ignore=shutil.ignore_patterns("__pycache__", "wheels"))
    (code / "train.py").write_text(SCRIPT)
    opt = tmp_path / "opt" / "ml"
    for sub in ("model", "output/data", "input/config"):
        (opt / sub).mkdir(parents=True)
    target = tmp_path / "site"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "BAKEOFF_OPT_ML": str(opt),
           "BAKEOFF_MLFLOW_INSTALL": "1", "MLFLOW_TRACKING_URI": "http://127.0.0.1:9",
           "BAKEOFF_MLFLOW_TARGET": str(target), "PYTHONPATH": str(ROOT / "tests" / "assets" / "no_mlflow"),
           "PIP_INDEX_URL": f"http://127.0.0.1:{server.server_address[1]}/simple/", "PIP_NO_CACHE_DIR": "1",
           "BAKEOFF_CONTINUE_ON_FAILURE": "1"}
    try:
        proc = subprocess.run([sys.executable, "launch.py", "train.py", str(gate), str(seen)], cwd=code, env=env,
                              capture_output=True, text=True, timeout=300)
    finally:
        server.shutdown()
    assert seen.exists(), proc.stderr[-3000:]
    got = json.loads(seen.read_text())
    assert got["marker_env"] and got["installed_at_start"] is False, got  # the script did not wait for pip
    assert got["install"]["action"] == "installed", (got, proc.stderr[-3000:])
    assert (target / "mlflow" / "__init__.py").exists()
