"""What the entrypoint imports that a leg's image may lack, and how each job gets it.

AWS's PyTorch 2.9 GPU and CPU training images have no `transformers`; the Neuron one has it
(estimators/images.py, `Image.ships`). A bake-off whose script imports it would see every GPU
job crash, and the trn leg train with no baseline. So every job of such a spec names the
package (bakeoff_runtime.process.package_install installs bakeoff's pin where the image lacks it), and a
spec whose jobs could not install it (network isolation, no wheels in the bundle) is refused.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import PurePosixPath

from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.plan.bundle import SHIPPED_FILES, Bundle

# Packages a job installs from bakeoff's own pin when its image lacks them
# (entrypoints/bakeoff_runtime/<name>-requirements.txt).
INSTALLABLE = ("transformers",)
SHIPPED = SHIPPED_FILES  # bakeoff's beside a user's source_dir


@lru_cache(maxsize=8)  # every training step of a compile asks about the same bundle
def imported(bundle: Bundle) -> frozenset[str]:
    """The top-level modules the bundle's Python files import (read, never run)."""
    names: set[str] = set()
    for name, data in bundle.files:
        if not name.endswith(".py"):
            continue
        try:
            tree = ast.parse(data.decode("utf-8", "replace"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return frozenset(names)


def needed(spec, bundle: Bundle) -> tuple[str, ...]:
    """The installable packages the entrypoint imports: a built-in trainer's own script, or the
    user's source_dir (what bakeoff ships beside it aside)."""
    if spec.entrypoint.builtin:
        keep = {bundle.script}
    else:
        keep = {n for n, _ in bundle.files if PurePosixPath(n).parts[0] != "bakeoff_runtime" and n not in SHIPPED}
    found = imported(Bundle(tuple((n, d) for n, d in bundle.files if n in keep), bundle.script))
    return tuple(p for p in INSTALLABLE if p in found)


def lacks(leg, package: str) -> bool:
    """Whether the leg's image is known to lack `package` (a user's own `image:` is taken as given)."""
    if leg.image:
        return False
    from bakeoff.estimators.images import NoDefaultImage, default_image

    try:
        return package not in default_image(leg.backend_name).ships
    except NoDefaultImage:
        return False


def _has_wheels(bundle: Bundle) -> bool:
    return any(n.split("/")[0] == "wheels" or "/wheels/" in f"/{n}" for n, _ in bundle.files)


def subnet_note(spec, bundle: Bundle) -> str | None:
    """What `validate` says of jobs in the spec's own subnets that install a package from the index at start:
    private subnets without a NAT reach no package index, and the job then starts without it (the leg
    crashes where the script imports it). Whether the subnets have a NAT is not visible offline."""
    if not spec.security.subnets or spec.security.network_isolation or _has_wheels(bundle):
        return None
    lacking = sorted({(leg.name, package) for package in needed(spec, bundle) for leg in spec.legs
                      if lacks(leg, package)})
    if not lacking:
        return None
    packages = sorted({p for _, p in lacking})
    legs = sorted({name for name, _ in lacking})
    return (f"legs {', '.join(legs)} install {', '.join(packages)} from the package index at start (their default "
            "images lack it): in private subnets without a NAT that fails and the leg crashes where the script "
            f"imports it; put the wheels in the source_dir's wheels/ (`pip download {' '.join(map(pin, packages))} "
            "-d wheels --only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.12`) or give the legs "
            "an `image:` that has it")


def check(spec, bundle: Bundle) -> None:
    """Refuse a spec whose jobs would need to install a package they cannot reach."""
    if not spec.security.network_isolation:
        return
    if _has_wheels(bundle):
        return
    for package in needed(spec, bundle):
        for i, leg in enumerate(spec.legs):
            if lacks(leg, package):
                raise SpecError(f"leg {leg.name!r}: the script imports {package}, which its default image lacks, and "
                                "under network isolation the job cannot install it: give the leg an `image:` that "
                                f"has it, or put its wheels in the source_dir's wheels/ (`pip download {pin(package)} "
                                "-d wheels --only-binary=:all: --platform manylinux2014_x86_64 --python-version "
                                "3.12`)", field=f"legs.{i}.image")


def pin(package: str) -> str:
    """bakeoff's pin of `package`, as its requirements file says."""
    from bakeoff_runtime.process import package_install

    lines = package_install.requirements_file(package).read_text().splitlines()
    return next(ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))
