"""``aipool models mirror fill|list`` against a hub on loopback (tests/unit/presets/hubserver.py):
a whole fill, an interrupted transfer resumed (within one fill and by the next), a checksum
that does not match (refused, the mirror as it was), ModelScope's file API, and a directory."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from huggingface_hub import constants as hf_constants
from huggingface_hub import file_download

from aipool.cli import main
from portal.presets import hubs
from portal.presets.mirror import MANIFEST, MirrorError, State, digest, status, target
from tests.unit.presets.hubserver import COMMIT, Hub, blob_id, serve

REPO = "acme/tiny-model"
WEIGHTS = bytes(range(256)) * 256  # 64 KiB: several chunks of the patched chunk size
FILES = {
    "config.json": b'{"model_type": "bert", "hidden_size": 8}\n',
    "model.safetensors": WEIGHTS,
    "tokenizer.json": b'{"version": "1.0"}\n',
    "README.md": b"# tiny\n",
    "pytorch_model.bin": b"not wanted",
}
PATTERNS = ["config.json", "*.safetensors", "tokenizer*"]
WANTED = ["config.json", "model.safetensors", "tokenizer.json"]


@pytest.fixture
def hub() -> Hub:
    return Hub(REPO, dict(FILES), {"model.safetensors"})


@pytest.fixture(autouse=True)
def _quick(monkeypatch: pytest.MonkeyPatch) -> None:
    # small chunks, so a cut transfer has written some before it breaks; no pause between tries
    monkeypatch.setattr(hf_constants, "DOWNLOAD_CHUNK_SIZE", 8192)
    monkeypatch.setattr(file_download.time, "sleep", lambda _s: None)


def fill(mirror: Path, url: str, source: str = "huggingface") -> hubs.Manifest:
    return hubs.fill(mirror, REPO, source, patterns=PATTERNS, endpoint=url)


def held(mirror: Path) -> dict[str, bytes]:
    root = target(mirror, REPO)
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_digests_are_the_hubs() -> None:
    # what `git hash-object` and `sha256sum` print for a file holding "hello\n"
    assert blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    path = Path(__file__).with_name("hello.txt")
    try:
        path.write_bytes(b"hello\n")
        assert digest(path, "git-sha1") == "ce013625030ba8dba906f756967f9e9ca394464a"
        assert digest(path, "sha256").startswith("5891b5b522d5df086d0ff0b110fbd9d2")
    finally:
        path.unlink()


def test_a_whole_fill_keeps_the_wanted_files_with_their_manifest(tmp_path: Path, hub: Hub) -> None:
    with serve(hub):
        manifest = fill(tmp_path, hub.url)
    files = held(tmp_path)
    assert sorted(files) == sorted([*WANTED, MANIFEST])
    assert all(files[name] == FILES[name] for name in WANTED)
    assert manifest.commit == COMMIT
    recorded = json.loads(files[MANIFEST])
    assert recorded["source"] == "huggingface"
    assert recorded["revision"] == "main"
    assert {f["path"]: f["sha256"] for f in recorded["files"]} == {
        name: hashlib.sha256(FILES[name]).hexdigest() for name in WANTED
    }
    assert (target(tmp_path, REPO) / "model.safetensors").stat().st_mode & 0o777 == 0o644
    # every file asked for at the listed commit, so they all come from the same one
    downloads = [r for r in hub.requests if r.startswith("GET /acme")]
    assert downloads
    assert all(f"/resolve/{COMMIT}/" in r for r in downloads)
    [row] = status(tmp_path, [("tiny", REPO)])
    assert (row.state, row.files, row.source) == (State.PRESENT, 3, "huggingface")
    assert row.size == sum(len(FILES[n]) for n in WANTED)


def test_a_cut_transfer_is_resumed_from_where_it_stopped(tmp_path: Path, hub: Hub) -> None:
    hub.cut = {"model.safetensors": 1}
    with serve(hub):
        fill(tmp_path, hub.url)
    assert held(tmp_path)["model.safetensors"] == WEIGHTS
    ranges = [r for r in hub.requests if "model.safetensors" in r and "bytes=" in r]
    [resumed] = ranges
    offset = int(re.search(r"bytes=(\d+)-", resumed).group(1))  # type: ignore[union-attr]
    assert 0 < offset < len(WEIGHTS)


def test_an_interrupted_fill_is_resumed_by_the_next(tmp_path: Path, hub: Hub) -> None:
    hub.cut = {"model.safetensors": 50}  # more than the client's retries: this fill fails
    with serve(hub), pytest.raises(MirrorError, match="run the fill again to resume"):
        fill(tmp_path, hub.url)
    assert not target(tmp_path, REPO).exists()
    [row] = status(tmp_path, [("tiny", REPO)])
    assert row.state is State.PARTIAL
    hub.cut, hub.requests[:] = {}, []
    with serve(hub):
        fill(tmp_path, hub.url)
    assert held(tmp_path)["model.safetensors"] == WEIGHTS
    resumed = [r for r in hub.requests if r.startswith("GET") and "model.safetensors" in r]
    assert len(resumed) == 1
    assert re.search(r"bytes=[1-9]\d*-", resumed[0])
    assert not any(p.name.endswith(".partial") for p in (tmp_path / "acme").iterdir())


@pytest.mark.parametrize(
    ("bad", "algorithm"), [("model.safetensors", "sha256"), ("config.json", "git-sha1")]
)
def test_a_checksum_mismatch_is_refused_and_the_mirror_left_as_it_was(
    tmp_path: Path, hub: Hub, bad: str, algorithm: str
) -> None:
    with serve(hub):
        fill(tmp_path, hub.url)
    before = held(tmp_path)
    hub.files["tokenizer.json"] = b'{"version": "2.0"}\n'  # a newer revision…
    hub.lie = {bad}  # …whose bad file is served with other bytes than the listing says
    with serve(hub), pytest.raises(MirrorError) as caught:
        fill(tmp_path, hub.url)
    text = str(caught.value)
    served = hub.served(bad)
    expected = (
        hashlib.sha256(FILES[bad]).hexdigest() if algorithm == "sha256" else blob_id(FILES[bad])
    )
    got = hashlib.sha256(served).hexdigest() if algorithm == "sha256" else blob_id(served)
    assert f"Checksum mismatch for {bad}" in text
    assert expected in text
    assert got in text
    assert algorithm in text
    assert dict(caught.value.message.params)["file"] == bad  # a Message: either language
    assert held(tmp_path) == before
    assert sorted(p.name for p in (tmp_path / "acme").iterdir()) == ["tiny-model"]


def test_modelscope_is_filled_through_its_client(tmp_path: Path, hub: Hub) -> None:
    with serve(hub):
        manifest = fill(tmp_path, hub.url, "modelscope")
    assert manifest.source == "modelscope"
    assert manifest.revision == "master"
    assert all(held(tmp_path)[n] == FILES[n] for n in WANTED)
    assert any(r.startswith(f"GET /api/v1/models/{REPO}/repo/files") for r in hub.requests)
    hub.lie = {"model.safetensors"}
    with serve(hub), pytest.raises(MirrorError, match=r"Checksum mismatch for model\.safetensors"):
        fill(tmp_path / "other", hub.url, "modelscope")
    assert not (tmp_path / "other" / "acme" / "tiny-model").exists()


def test_endpoints_come_from_the_option_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("AIPOOL_HF_ENDPOINT", "HF_ENDPOINT", "AIPOOL_MODELSCOPE_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("MODELSCOPE_ENDPOINT", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.com/")
    monkeypatch.setenv("MODELSCOPE_DOMAIN", "modelscope.example.cn")
    assert hubs.hf_endpoint() == "https://hf-mirror.com"
    assert hubs.hf_endpoint("http://127.0.0.1:9") == "http://127.0.0.1:9"
    monkeypatch.setenv("AIPOOL_HF_ENDPOINT", "https://hub.site.example")
    assert hubs.hf_endpoint() == "https://hub.site.example"
    assert hubs.modelscope_endpoint() == "https://modelscope.example.cn"


def test_a_repository_id_cannot_leave_the_mirror(tmp_path: Path) -> None:
    for bad in ("../etc", "acme/..", "/abs", "a/b/c", ".hidden/x"):
        with pytest.raises(MirrorError, match="is not a hub repository id"):
            target(tmp_path, bad)


def test_the_command_fills_from_a_directory_and_lists_it(tmp_path: Path) -> None:
    snapshot = tmp_path / "snap" / "google" / "vit-base-patch16-224"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text('{"model_type": "vit"}\n')
    (snapshot / "model.safetensors").write_bytes(WEIGHTS)
    (snapshot / ".git").mkdir()
    (snapshot / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    mirror = tmp_path / "mirror"
    runner = CliRunner()
    args = ["models", "mirror", "fill", "vit-base-classifier", "--from", str(tmp_path / "snap")]
    result = runner.invoke(main, [*args, "--mirror", str(mirror)])
    assert result.exit_code == 0, result.output
    assert "vit-base-classifier: google/vit-base-patch16-224" in result.output
    root = mirror / "google" / "vit-base-patch16-224"
    manifest = json.loads((root / MANIFEST).read_text())
    assert manifest["source"] == "directory"
    assert {f["path"]: f["sha256"] for f in manifest["files"]}["model.safetensors"] == digest(
        root / "model.safetensors", "sha256"
    )
    assert not (root / ".git").exists()
    listed = runner.invoke(main, ["models", "mirror", "list", "--mirror", str(mirror), "--json"])
    rows = {r["preset"]: r for r in json.loads(listed.output)}
    assert rows["vit-base-classifier"]["state"] == "present"
    assert rows["vit-base-classifier"]["files"] == len(list(root.glob("*"))) - 1
    assert rows["detr-detector"]["state"] == "absent"
    refused = runner.invoke(main, ["models", "mirror", "fill", "no-such", "--from", "huggingface"])
    assert refused.exit_code != 0


def test_the_command_says_a_refusal_in_the_sites_language(
    tmp_path: Path, hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    import translations

    monkeypatch.setenv("AIPOOL_DEFAULT_LOCALE", "zh_CN")
    monkeypatch.setenv("AIPOOL_HF_ENDPOINT", "http://127.0.0.1:9")  # not used: --endpoint wins
    vit = Hub("google/vit-base-patch16-224", {"config.json": b"{}"}, set(), lie={"config.json"})
    mirror = tmp_path / "mirror"
    with serve(vit):
        args = ["models", "mirror", "fill", "vit-base-classifier", "--from", "huggingface"]
        result = CliRunner().invoke(main, [*args, "--endpoint", vit.url, "--mirror", str(mirror)])
    assert result.exit_code == 1
    said = translations.gettext(
        "zh_CN",
        "Checksum mismatch for %(file)s: the hub lists %(algorithm)s %(expected)s, the download "
        "has %(got)s; the mirror was left as it was.",
        file="config.json",
        algorithm="git-sha1",
        expected=blob_id(b"{}"),
        got=blob_id(vit.served("config.json")),
    )
    assert f"vit-base-classifier: {said}" in result.output
    assert not (mirror / "google" / "vit-base-patch16-224").exists()


def test_a_listed_path_that_would_leave_the_repository_is_never_fetched(
    tmp_path: Path, hub: Hub
) -> None:
    hub.files["../../escaped.json"] = b"{}"
    hub.files["sub/../../up.json"] = b"{}"
    hub.files[".gitattributes"] = b"*.safetensors filter=lfs"
    with serve(hub):
        hubs.fill(tmp_path / "mirror", REPO, "huggingface", patterns=["*"], endpoint=hub.url)
    assert not (tmp_path / "escaped.json").exists()
    assert not (tmp_path / "up.json").exists()
    assert sorted(held(tmp_path / "mirror")) == sorted([*FILES, MANIFEST])
    assert not any("escaped" in r or "up.json" in r for r in hub.requests)


def test_an_unreachable_hub_is_said_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(MirrorError, match=r"could not be listed at http://127\.0\.0\.1:9"):
        hubs.fill(tmp_path, REPO, "huggingface", endpoint="http://127.0.0.1:9")
    assert not target(tmp_path, REPO).exists()


def test_a_hugging_face_cache_is_a_directory_to_fill_from(tmp_path: Path) -> None:
    # the layout `hf download` leaves: files in blobs/, a snapshot of links, refs/main naming it
    cache = tmp_path / "hub" / "models--acme--tiny-model"
    (cache / "blobs").mkdir(parents=True)
    (cache / "blobs" / "b1").write_bytes(WEIGHTS)
    (cache / "blobs" / "b2").write_bytes(FILES["config.json"])
    for commit in (COMMIT, "f" * 40):  # two snapshots: refs/main says which
        (cache / "snapshots" / commit).mkdir(parents=True)
    (cache / "snapshots" / COMMIT / "model.safetensors").symlink_to("../../blobs/b1")
    (cache / "snapshots" / COMMIT / "config.json").symlink_to("../../blobs/b2")
    (cache / "refs").mkdir()
    (cache / "refs" / "main").write_text(COMMIT)
    manifest = hubs.fill(tmp_path / "mirror", REPO, str(tmp_path / "hub"), revision="main")
    assert [f.path for f in manifest.files] == ["config.json", "model.safetensors"]
    files = held(tmp_path / "mirror")
    assert files["model.safetensors"] == WEIGHTS
    assert not (target(tmp_path / "mirror", REPO) / "model.safetensors").is_symlink()
