"""A compile-cache archive in S3 is another job's output: restoring it writes only regular files
under the cache folder, or nothing at all (the job then trains cold and says why)."""
import io
import tarfile

import pytest

from bakeoff_runtime.training.graph_cache import ARCHIVE, restore

LOCATION = "s3://bakeoff-cache/compile-cache/cuda/abc"


def _archive(*members):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for info, body in members:
            tar.addfile(info, io.BytesIO(body) if body is not None else None)
    return raw.getvalue()


def _file(name, body=b"graph"):
    info = tarfile.TarInfo(name)
    info.size = len(body)
    return info, body


def _special(name, kind, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info, None


@pytest.fixture
def s3(monkeypatch):
    from moto import mock_aws

    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        import boto3

        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="bakeoff-cache")
        yield client


def _put(s3, body):
    s3.put_object(Bucket="bakeoff-cache", Key=f"compile-cache/cuda/abc/{ARCHIVE}", Body=body)


@pytest.mark.parametrize("member,why", [
    (_file("../escaped"), "points outside the cache"),
    (_file("/tmp/absolute-escape"), "points outside the cache"),
    (_special("link", tarfile.SYMTYPE, "/etc/passwd"), "is a link"),
    (_special("hard", tarfile.LNKTYPE, "/etc/passwd"), "is a link"),
    (_special("dev", tarfile.CHRTYPE), "is a device or FIFO"),
    (_special("fifo", tarfile.FIFOTYPE), "is a device or FIFO"),
])
def test_a_hostile_cache_archive_is_refused_whole_and_the_job_trains_cold(s3, tmp_path, member, why):
    target = tmp_path / "cache" / "inductor"
    _put(s3, _archive(_file("fxgraph/ok.bin"), member))
    out = restore(LOCATION, target)
    assert out["restored"] is False and why in out["note"] and member[0].name in out["note"], out
    assert not any(target.rglob("*")), "a refused archive left files behind"
    assert not (tmp_path / "cache" / "escaped").exists() and not (tmp_path / "escaped").exists()


def test_a_plain_cache_archive_is_restored(s3, tmp_path):
    _put(s3, _archive(_file("fxgraph/a.bin", b"x" * 10), _file("aotautograd/b.bin")))
    out = restore(LOCATION, tmp_path / "inductor")
    assert out["restored"] is True and out["files"] == 2
    assert (tmp_path / "inductor" / "fxgraph" / "a.bin").read_bytes() == b"x" * 10


def test_a_corrupt_archive_is_a_cold_start_not_a_crash(s3, tmp_path):
    _put(s3, b"\x1f\x8b" + b"not really gzip")
    out = restore(LOCATION, tmp_path / "inductor")
    assert out["restored"] is False and out["note"].startswith("cache archive refused:")


def _hostile_tar(path):
    with tarfile.open(path, "w:gz") as tar:
        for info, body in (_file("../../escaped.json", b'{"ok": false}'), _file("/tmp/absolute.json", b"{}"),
                           _special("summary.json", tarfile.SYMTYPE, "/etc/passwd"),
                           _special("dev", tarfile.CHRTYPE), _file("collective.json", b'{"ok": true}')):
            tar.addfile(info, io.BytesIO(body) if body is not None else None)


def test_job_archives_are_read_member_by_member_never_unpacked(tmp_path):
    """output.tar.gz, the collective check's model.tar.gz and the Preflight artifacts are read into
    memory, regular files only, by name: a hostile member writes nothing and a link is not followed."""
    from bakeoff_runtime.verdict.job_outputs import _from_tar
    from bakeoff_runtime.verdict.porting import _members

    job = tmp_path / "run" / "job"
    job.mkdir(parents=True)
    _hostile_tar(job / "model.tar.gz")
    members = _members(job)
    assert members["collective.json"] == b'{"ok": true}' and "summary.json" not in members and "dev" not in members
    assert _from_tar(job / "model.tar.gz", "summary.json") is None  # the link is not read through
    assert _from_tar(job / "model.tar.gz", "collective.json") == b'{"ok": true}'
    assert not (tmp_path / "escaped.json").exists() and not (tmp_path / "run" / "escaped.json").exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["job", "model.tar.gz", "run"]
