"""No file in the repository names a package registry's host.

Scripts find the Debian mirror in the machine's apt sources (``infra/testing/debian_mirror.sh``), pip
and npm use their own configuration, and PyTorch's CPU wheel index comes from the builder's environment
or the CI's settings: a host written into the tree would bypass the mirror or proxy a machine is set up
with (and this machine reaches only its configured registries).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Host names of the public package registries (Debian, Ubuntu, PyPI, PyTorch's wheel index, npm, yarn),
# split so this file does not name them itself.
REGISTRY_HOSTS = [
    "deb" + ".debian.org",
    "security" + ".debian.org",
    "snapshot" + ".debian.org",
    "ftp" + ".debian.org",
    "archive" + ".ubuntu.com",
    "pypi" + ".org",
    "pythonhosted" + ".org",
    "download" + ".pytorch.org",
    "registry" + ".npmjs.org",
    "registry" + ".yarnpkg.com",
]


def tracked_files(root: Path) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    return [root / name.decode() for name in listed.split(b"\0") if name]


def registry_hosts_in(root: Path) -> list[str]:
    """``path: host`` for every tracked file under ``root`` that names a registry host (any case)."""
    found = []
    for path in tracked_files(root):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", errors="replace").lower()
            found += [f"{path.relative_to(root)}: {host}" for host in REGISTRY_HOSTS if host in text]
    return found


def test_no_tracked_file_names_a_package_registry_host() -> None:
    found = registry_hosts_in(ROOT)
    assert not found, "read the host from the machine's configuration instead:\n" + "\n".join(found)


def test_the_scan_finds_a_planted_host_in_a_tracked_file(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "build.sh").write_text(
        f"curl -o k.tgz http://{REGISTRY_HOSTS[0].upper()}/debian/pool/k.tgz\n"
    )
    (tmp_path / "clean.sh").write_text("echo mirror from apt sources\n")
    (tmp_path / "untracked.sh").write_text(f"pip download --index-url https://{REGISTRY_HOSTS[5]}/simple x\n")
    subprocess.run(["git", "add", "build.sh", "clean.sh"], cwd=tmp_path, check=True)
    assert registry_hosts_in(tmp_path) == [f"build.sh: {REGISTRY_HOSTS[0]}"]


def test_the_debian_mirror_comes_from_the_apt_sources() -> None:
    mirror = subprocess.run(
        ["bash", str(ROOT / "infra/testing/debian_mirror.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()
    sources = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
    configured = "".join(p.read_text() for p in sources if p.is_file())
    assert mirror.startswith("http") and mirror in configured
