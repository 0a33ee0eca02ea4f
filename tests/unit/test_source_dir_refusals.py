"""What a source dir may be before bakeoff packs it and uploads it for every job: never the file
system's root, the user's home directory or a folder above it; never a run directory itself (`bakeoff run
--out .` with `source_dir: "."`); and ignore files of any size read in bounded time (a huge one is
matched by index, or refused in one line naming the file and the limit)."""
import pytest

from bakeoff.pipelines.plan.bundle import MAX_IGNORE_PATTERNS, MAX_SCANNED_PATTERNS, build_bundle

LEGS = """legs:
  - name: trn1
    instance_type: ml.trn1.2xlarge
  - name: g5
    instance_type: ml.g5.xlarge
"""


def _spec(folder, source_dir: str, allow_outside: bool = False):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.py").write_text("print('hi')\n")
    spec = folder / "spec.yaml"
    spec.write_text(f"name: t\n{LEGS}entrypoint: {{source_dir: '{source_dir}', script: train.py, "
                    f"allow_outside_spec_dir: {str(allow_outside).lower()}}}\n")
    return spec


def _one_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stdout + proc.stderr
    return lines[0]


@pytest.mark.parametrize("allow_outside", [False, True])
def test_the_file_system_root_is_refused(tmp_path, cli, allow_outside):
    line = _one_line(cli("validate", _spec(tmp_path / "proj", "/", allow_outside)))
    assert "entrypoint.source_dir" in line and "source_dir / is the root of the file system" in line
    assert "spec.yaml:" in line and "point source_dir at the folder that holds the training code" in line


def test_the_home_directory_is_refused(tmp_path, cli):
    home = tmp_path / "home" / "me"
    line = _one_line(cli("validate", _spec(home, "."), env={"HOME": str(home)}))
    assert f"source_dir {home} is your home directory" in line and "dotfiles, keys" in line


def test_a_folder_above_home_is_refused(tmp_path, cli):
    home = tmp_path / "home" / "me"
    home.mkdir(parents=True)
    line = _one_line(cli("validate", _spec(tmp_path / "home", "."), env={"HOME": str(home)}))
    assert f"is a folder above your home directory ({home})" in line


def test_a_project_under_home_is_packed(tmp_path, cli):
    home = tmp_path / "home" / "me"
    assert cli("validate", _spec(home / "proj", "."), env={"HOME": str(home)}).returncode == 0


def test_out_dot_with_source_dir_dot_says_what_happened(tmp_path, cli):
    """`bakeoff run --out .` beside a spec whose source_dir is `.`: the run directory is the source dir, whose
    run-directory marker once left every file out ("script 'train.py' not found"); now one line says why."""
    proj = tmp_path / "proj"
    spec = _spec(proj, ".")
    proc = cli("run", spec, "--out", ".", cwd=proj)
    line = _one_line(proc)
    assert "not found" not in line and f"{proj} is a bakeoff run directory (it holds .bakeoff.lock" in line
    assert "give --out a folder of its own" in line and f"delete {proj}/.bakeoff.lock" in line
    # ... and so does `validate` afterwards, while the marker is there; without it the spec is fine.
    assert "is a bakeoff run directory" in _one_line(cli("validate", spec))
    (proj / ".bakeoff.lock").unlink()
    assert cli("validate", spec).returncode == 0


def test_a_script_left_out_by_an_ignore_file_is_said_so(tmp_path, cli):
    spec = _spec(tmp_path / "proj", ".")
    (tmp_path / "proj" / ".bakeoffignore").write_text("*.py\n")
    line = _one_line(cli("validate", spec))
    assert "script 'train.py' is left out of the bundle" in line and ".bakeoffignore" in line


def test_fifty_thousand_ignore_patterns_are_matched_and_the_last_one_decides(tmp_path, cli):
    proj = tmp_path / "proj"
    spec = _spec(proj, ".")
    patterns = [f"gen_{i}_*.tmp" for i in range(25_000)] + [f"/build{i}/" for i in range(12_500)] + \
        [f"cache{i}.bin" for i in range(12_499)] + ["!gen_7_keep.tmp"]
    assert len(patterns) == 50_000
    (proj / ".bakeoffignore").write_text("\n".join(patterns) + "\n")
    for rel in ("gen_7_a.tmp", "gen_24999_b.tmp", "gen_7_keep.tmp", "other.tmp", "build12499/x.py",
                "sub/build3/x.py", "cache12498.bin", "sub/cache5.bin", "cache12499.bin"):
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text("x\n")
    bundle = build_bundle(proj, "train.py")
    packed = {n for n, _ in bundle.files}
    assert {"gen_7_keep.tmp", "other.tmp", "sub/build3/x.py", "cache12499.bin", "train.py"} <= packed
    assert not packed & {"gen_7_a.tmp", "gen_24999_b.tmp", "build12499/x.py", "cache12498.bin", "sub/cache5.bin"}
    assert cli("validate", spec).returncode == 0


def test_too_many_patterns_to_try_one_by_one_are_refused_naming_the_file_and_the_limit(tmp_path, cli):
    proj = tmp_path / "proj"
    spec = _spec(proj, ".")
    (proj / ".bakeoffignore").write_text("\n".join(f"*x{i}*" for i in range(50_000)) + "\n")
    line = _one_line(cli("validate", spec))
    assert f"{proj / '.bakeoffignore'} has more than {MAX_SCANNED_PATTERNS:,} patterns that must each be tried" in line
    assert "entrypoint.source_dir" in line


def test_an_ignore_file_past_the_pattern_limit_is_refused(tmp_path, cli):
    proj = tmp_path / "proj"
    spec = _spec(proj, ".")
    (proj / ".gitignore").write_text("\n".join(f"f{i}.tmp" for i in range(MAX_IGNORE_PATTERNS + 1)) + "\n")
    line = _one_line(cli("validate", spec))
    assert f"{proj / '.gitignore'} has more than {MAX_IGNORE_PATTERNS:,} patterns" in line
