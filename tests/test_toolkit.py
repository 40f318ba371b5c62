"""Toolkit lookup (nqprof.cuda.toolkit) and the wheel toolkit root, with fake nvcc scripts."""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

import pytest

from nqprof.cuda import toolkit as tk
from nqprof.cuda.toolkit_root import make_root
from nqprof.cuda.wheel_toolkit import parse_version, wheel_specs
from nqprof.errors import InputError, UnavailableError


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_nvcc(path: Path, release: str = "13.0", build: str = "88") -> Path:
    """An nvcc that answers --version and -dryrun (TOP is the folder above its own)."""
    return _script(
        path,
        f"""case "$1" in
  --version) echo "Cuda compilation tools, release {release}, V{release}.{build}"; exit 0;;
  -dryrun) echo '#$ _HERE_='"${{0%/*}}" >&2; echo '#$ TOP='"${{0%/*}}/.." >&2; exit 0;;
esac
exit 1
""",
    )


def fake_toolkit(
    root: Path, release: str = "13.0", layout: str = "flat", cudadevrt: bool = True
) -> Path:
    """A toolkit root: headers and libs under include/ and lib64/ ("flat") or only under
    targets/x86_64-linux/ ("targets")."""
    fake_nvcc(root / "bin" / "nvcc", release)
    base = root if layout == "flat" else root / "targets" / "x86_64-linux"
    (base / "include").mkdir(parents=True)
    (base / "include" / "cuda_runtime.h").write_text("")
    lib = base / ("lib64" if layout == "flat" else "lib")
    lib.mkdir(parents=True)
    if cudadevrt:
        (lib / "libcudadevrt.a").write_bytes(b"!<arch>\n")
    return root


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    """Each test looks its toolkit up afresh: no answer kept in this process, and a cache
    folder of its own (the lookup's memo lives there)."""
    monkeypatch.setenv("NQPROF_CACHE_DIR", str(tmp_path / "cache"))
    tk._cache.clear()
    yield
    tk._cache.clear()


@pytest.fixture
def roots(tmp_path):
    """Three toolkits with different releases, and an empty PATH."""
    empty = tmp_path / "empty"
    empty.mkdir()
    return {
        "nq": fake_toolkit(tmp_path / "nq", "13.5"),
        "home": fake_toolkit(tmp_path / "home", "13.2"),
        "path": fake_toolkit(tmp_path / "cudapath", "13.1"),
        "PATH": str(empty),
    }


def test_lookup_order(roots):
    env = {
        "NQPROF_CUDA_HOME": str(roots["nq"]),
        "CUDA_HOME": str(roots["home"]),
        "CUDA_PATH": str(roots["path"]),
        "PATH": roots["PATH"],
    }
    found = tk.find_toolkit(env)
    assert (found.source, found.root, found.version) == ("NQPROF_CUDA_HOME", roots["nq"], "13.5")
    del env["NQPROF_CUDA_HOME"]
    assert (tk.find_toolkit(env).source, tk.find_toolkit(env).version) == ("CUDA_HOME", "13.2")
    del env["CUDA_HOME"]
    assert (tk.find_toolkit(env).source, tk.find_toolkit(env).version) == ("CUDA_PATH", "13.1")


def test_toolkit_fields(roots):
    found = tk.find_toolkit({"CUDA_HOME": str(roots["home"]), "PATH": roots["PATH"]})
    root = roots["home"]
    assert found.nvcc == root / "bin" / "nvcc"
    assert found.nvlink == root / "bin" / "nvlink"
    assert found.include_dir == root / "include"
    assert found.lib_dir == root / "lib64"
    assert found.cudadevrt == root / "lib64" / "libcudadevrt.a"
    assert "13.2" in found.describe() and "CUDA_HOME" in found.describe()


def test_targets_layout_and_missing_cudadevrt(tmp_path):
    root = fake_toolkit(tmp_path / "t", layout="targets", cudadevrt=False)
    found = tk.find_toolkit({"CUDA_HOME": str(root), "PATH": ""})
    assert found.include_dir == root / "targets" / "x86_64-linux" / "include"
    assert found.lib_dir == root / "targets" / "x86_64-linux" / "lib"
    assert found.cudadevrt is None


def test_nvcc_on_path_is_a_wrapper(tmp_path):
    """The root comes from nvcc -dryrun's TOP line, not from where the wrapper lies."""
    root = fake_toolkit(tmp_path / "cuda-13.0")
    bindir = tmp_path / "usr-local-bin"
    _script(bindir / "nvcc", f'exec "{root}/bin/nvcc" "$@"\n')
    found = tk.find_toolkit({"PATH": str(bindir)})
    assert (found.source, found.root, found.nvcc) == ("PATH", root, root / "bin" / "nvcc")


def test_bad_cuda_home_falls_through(roots, tmp_path):
    env = {
        "CUDA_HOME": str(tmp_path / "nowhere"),
        "CUDA_PATH": str(roots["path"]),
        "PATH": roots["PATH"],
    }
    assert tk.find_toolkit(env).source == "CUDA_PATH"


def test_bad_nqprof_cuda_home_is_an_error(roots, tmp_path):
    """An explicit choice never silently becomes another toolkit."""
    env = {
        "NQPROF_CUDA_HOME": str(tmp_path / "nowhere"),
        "CUDA_HOME": str(roots["home"]),
        "PATH": roots["PATH"],
    }
    with pytest.raises(UnavailableError, match="NQPROF_CUDA_HOME=.*nowhere has no bin/nvcc"):
        tk.find_toolkit(env)


def test_missing_toolkit_names_what_was_tried(tmp_path):
    env = {"CUDA_PATH": str(tmp_path / "gone"), "PATH": str(tmp_path)}
    with pytest.raises(UnavailableError) as info:
        tk.find_toolkit(env)
    message = str(info.value)
    assert "\n" not in message
    for part in ("NQPROF_CUDA_HOME, CUDA_HOME unset", "CUDA_PATH=", "no nvcc on PATH"):
        assert part in message


def test_cached_per_env(roots):
    env = {"CUDA_HOME": str(roots["home"]), "PATH": roots["PATH"]}
    assert tk.find_toolkit(env) is tk.find_toolkit(dict(env))
    assert tk.find_toolkit({**env, "CUDA_HOME": str(roots["path"])}).version == "13.1"


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "Cuda compilation tools, release 13.0, "
            "V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0",
            "13.0",
        ),
        ("Cuda compilation tools, release 12.4, V12.4.131", "12.4"),
        ("Cuda compilation tools, release 13.10, V13.10.1", "13.10"),
    ],
)
def test_toolkit_version(tmp_path, text, expected):
    nvcc = _script(tmp_path / "nvcc", f"printf '%s\\n' '{text}'\n")
    assert tk.toolkit_version(nvcc) == expected


def test_toolkit_version_failures(tmp_path):
    with pytest.raises(UnavailableError, match="did not report a CUDA release"):
        tk.toolkit_version(_script(tmp_path / "nvcc", "echo hello\n"))
    with pytest.raises(UnavailableError, match="cannot run"):
        tk.toolkit_version(tmp_path / "absent")


def test_wheel_root_layout(tmp_path):
    """A root of symlinks into the wheels' nvidia/cu13 that nvcc and the lookup both accept."""
    wheels = tmp_path / "site-packages" / "nvidia" / "cu13"
    fake_nvcc(wheels / "bin" / "nvcc", "13.0")
    (wheels / "bin" / "nvcc.profile").write_text("TOP = $(_HERE_)/..\n")
    (wheels / "bin" / "crt").mkdir()
    (wheels / "include").mkdir()
    (wheels / "include" / "cuda_runtime.h").write_text("")
    (wheels / "lib").mkdir()
    (wheels / "lib" / "libcudadevrt.a").write_bytes(b"!<arch>\n")
    (wheels / "nvvm" / "bin").mkdir(parents=True)
    dest = tmp_path / "env" / "cuda"
    dest.mkdir(parents=True)
    (dest / "stale").write_text("")
    make_root(wheels, dest)
    assert not (dest / "stale").exists()
    assert (dest / "bin").is_dir() and not (dest / "bin").is_symlink()  # nvcc's TOP must be dest
    assert (dest / "bin" / "nvcc.profile").resolve() == (wheels / "bin" / "nvcc.profile").resolve()
    assert (dest / "targets" / "x86_64-linux" / "include" / "cuda_runtime.h").exists()
    assert (dest / "lib64" / "libcudadevrt.a").exists()
    found = tk.find_toolkit({"NQPROF_CUDA_HOME": str(dest), "PATH": ""})
    assert (found.root, found.version, found.source) == (dest, "13.0", "NQPROF_CUDA_HOME")
    assert (
        found.cudadevrt is not None
        and found.cudadevrt.resolve() == (wheels / "lib" / "libcudadevrt.a").resolve()
    )


def test_wheel_versions():
    assert parse_version("cuda13.0") == parse_version("13.0") == "13.0"
    assert wheel_specs("13.5") == [
        "nvidia-cuda-nvcc==13.5.*",
        "nvidia-cuda-runtime==13.5.*",
        "nvidia-cuda-crt==13.5.*",
        "nvidia-nvvm==13.5.*",
        "nvidia-cuda-cccl==13.5.*",
    ]
    with pytest.raises(InputError):
        parse_version("cuda-system")


def test_this_machines_toolkit():
    """Whatever toolkit this machine has (skipped without one) looks like a toolkit."""
    try:
        found = tk.find_toolkit()
    except UnavailableError as exc:
        pytest.skip(str(exc))
    assert found.nvcc.is_file() and os.access(found.nvcc, os.X_OK)
    assert found.version.count(".") == 1
    assert (found.include_dir / "cuda_runtime.h").exists()


def test_the_lookup_is_kept_while_the_toolkit_is_the_same(roots, tmp_path, monkeypatch):
    """A second process (here: the in-process answer forgotten) takes the toolkit from the
    cache folder without running nvcc; a changed nvcc, or another PATH, is looked up again."""
    root = fake_toolkit(tmp_path / "kept", "12.6")
    env = {"CUDA_HOME": str(root), "PATH": roots["PATH"]}
    first = tk.find_toolkit(env)
    tk._cache.clear()
    calls = []
    real = tk._lookup
    monkeypatch.setattr(tk, "_lookup", lambda e: calls.append(1) or real(e))
    assert tk.find_toolkit(env) == first and calls == []
    tk._cache.clear()
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text(nvcc.read_text().replace("12.6", "12.8") + "\n")  # the toolkit was replaced
    os.utime(nvcc, ns=(1, 1))  # another modification time, whatever the clock's resolution
    assert tk.find_toolkit(env).version == "12.8" and calls == [1]
    tk._cache.clear()
    other = {**env, "PATH": str(tmp_path)}  # other variables: another key
    assert tk.find_toolkit(other).version == "12.8" and calls == [1, 1]


def _deb(path: Path, members: dict[str, bytes], compression: str = "xz") -> Path:
    """A Debian package (an ar archive whose data.tar.<compression> holds ``members``; "zst"
    compresses with the zstd command, as Ubuntu's packages are)."""
    import io
    import subprocess
    import tarfile

    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz" if compression == "xz" else "w") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(f"./{name}")
            info.size, info.mode = len(content), 0o755
            tar.addfile(info, io.BytesIO(content))
    payload = data.getvalue()
    if compression == "zst":
        payload = subprocess.run(["zstd", "-q", "-c"], input=payload, capture_output=True).stdout
    control = io.BytesIO()
    with tarfile.open(fileobj=control, mode="w:xz") as tar:
        text = f"Package: {path.name.split('_')[0]}\nVersion: 1\nArchitecture: all\n".encode()
        info = tarfile.TarInfo("./control")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    out = b"!<arch>\n"
    for name, content in (
        ("debian-binary", b"2.0\n"),
        ("control.tar.xz", control.getvalue()),
        (f"data.tar.{compression}", payload),
    ):
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(content):<10}`\n".encode()
        out += content + (b"\n" if len(content) % 2 else b"")
    path.write_bytes(out)
    return path


def test_files_taken_from_a_debian_package(tmp_path):
    from nqprof.cuda.deb_toolkit import extract_deb

    deb = _deb(
        tmp_path / "nvidia-cuda-toolkit_12.4_amd64.deb",
        {
            "usr/lib/nvidia-cuda-toolkit/bin/nvcc": b"nvcc",
            "usr/include/crt/host_config.h": b"crt",
            "usr/include/cuda_runtime.h": b"rt",
            "usr/share/doc/readme": b"doc",
        },
    )
    dest = tmp_path / "root"
    missing = extract_deb(
        deb,
        [
            ("usr/lib/nvidia-cuda-toolkit/bin/nvcc", "bin/nvcc"),
            ("usr/include/", "include/"),
            ("usr/bin/nvlink", "bin/nvlink"),
        ],
        dest,
    )
    assert missing == ["usr/bin/nvlink"]
    assert (dest / "bin" / "nvcc").read_bytes() == b"nvcc" and os.access(
        dest / "bin" / "nvcc", os.X_OK
    )
    assert (dest / "include" / "crt" / "host_config.h").read_bytes() == b"crt"
    assert not (dest / "share").exists() and not (dest / "usr").exists()


@pytest.mark.skipif(
    not (shutil.which("zstd") and shutil.which("dpkg-deb")), reason="needs zstd and dpkg-deb"
)
def test_files_taken_from_a_zstd_package(tmp_path):
    """Ubuntu's packages hold data.tar.zst, which Python's tarfile cannot read: dpkg-deb does."""
    from nqprof.cuda.deb_toolkit import extract_deb

    deb = _deb(
        tmp_path / "libcu++-dev_1.9.0-3_all.deb",
        {"usr/include/nv/target": b"nv", "usr/include/cuda/std/type_traits": b"tt"},
        compression="zst",
    )
    dest = tmp_path / "root"
    missing = extract_deb(
        deb, [("usr/include/nv/", "include/nv/"), ("usr/include/cuda/", "include/cuda/")], dest
    )
    assert missing == []
    assert (dest / "include" / "nv" / "target").read_bytes() == b"nv"
    assert (dest / "include" / "cuda" / "std" / "type_traits").read_bytes() == b"tt"


#: Every CUDA 12 release made from Debian's or Ubuntu's packages, spelled out: the package
#: list's line (with the keyring K), what ``apt-get download`` is asked for, the cccl wheel
#: and the ptxas flags of the root's nvcc.profile.
PACKAGED = {
    "12.0": (
        "deb [arch=amd64 signed-by=K] http://archive.ubuntu.com/ubuntu noble multiverse universe\n",
        [
            "nvidia-cuda-toolkit=12.0.140~12.0.1-4build4",
            "nvidia-cuda-dev=12.0.146~12.0.1-4build4",
            "libcu++-dev=1.9.0-3",
        ],
        "",
        "-suppress-debug-info",
    ),
    "12.2": (
        "deb [arch=amd64 signed-by=K] http://archive.ubuntu.com/ubuntu plucky "
        "multiverse universe\n",
        [
            "nvidia-cuda-toolkit=12.2.140~12.2.2-2build1",
            "nvidia-cuda-dev=12.2.140~12.2.2-2build1",
            "libcu++-dev=2.2.0-3",
        ],
        "",
        "",
    ),
    "12.4": (
        "deb [arch=amd64 signed-by=K] http://deb.debian.org/debian trixie non-free\n",
        ["nvidia-cuda-toolkit=12.4.131~12.4.1-2", "nvidia-cuda-dev=12.4.127~12.4.1-2"],
        "12.4.*",
        "",
    ),
    "12.5": (
        "deb [arch=amd64 signed-by=K] http://deb.debian.org/debian experimental non-free\n",
        ["nvidia-cuda-toolkit=12.5.40~12.5.0-2+b1", "nvidia-cuda-dev=12.5.39~12.5.0-2+b1"],
        "12.5.*",
        "",
    ),
}
UBUNTU_KEYRING_DEB = "ubuntu-keyring=2023.11.28.1-0.2"


def test_the_cuda12_releases():
    """The table of CUDA 12 releases, their archives and keyrings, character for character."""
    from nqprof.cuda.deb_toolkit import DEB_RELEASES, DEBIAN, UBUNTU

    assert list(DEB_RELEASES) == list(PACKAGED)
    for version, (line, specs, cccl, flags) in PACKAGED.items():
        release = DEB_RELEASES[version]
        assert release.source("K") == line, version
        assert list(release.packages().values()) == specs, version
        assert (release.cccl, release.ptxas_flags) == (cccl, flags), version
        for spec in specs[:2]:  # the upstream release on both sides of the ~
            assert re.fullmatch(
                rf"[\w-]+={re.escape(version)}\.\d+~{re.escape(version)}\.\d+-.+", spec
            )
        assert not cccl or cccl == f"{version}.*"
    assert DEBIAN.keyring == "/usr/share/keyrings/debian-archive-keyring.gpg"
    assert DEBIAN.fallback is None
    assert UBUNTU.keyring == "/usr/share/keyrings/ubuntu-archive-keyring.gpg"
    fb = UBUNTU.fallback
    assert (fb.suite, fb.component, f"{fb.package}={fb.version}", fb.path) == (
        "trixie",
        "main",
        UBUNTU_KEYRING_DEB,
        "usr/share/keyrings/ubuntu-archive-keyring.gpg",
    )


def _fake_packages(toolkit_release: str) -> dict[str, dict[str, bytes]]:
    """The members of each fake package, by name: what DEB_FILES takes from it."""
    nvcc = (
        "#!/bin/sh\n"
        f'[ "$1" = --version ] && echo "Cuda compilation tools, release {toolkit_release}, '
        f'V{toolkit_release}.1" && exit 0\nexit 1\n'
    ).encode()
    tool = "usr/lib/nvidia-cuda-toolkit/"
    return {
        "ubuntu-keyring": {"usr/share/keyrings/ubuntu-archive-keyring.gpg": b"UBUNTU KEYS"},
        "nvidia-cuda-toolkit": {
            f"{tool}bin/nvcc": nvcc,
            f"{tool}bin/crt/link.stub": b"",
            f"{tool}bin/cicc": b"",
            f"{tool}libdevice/libdevice.10.bc": b"",
            f"{tool}bin/gcc": b"#!/bin/sh\nexec gcc-12 \"$@\"\n",
            f"{tool}bin/g++": b"#!/bin/sh\nexec g++-12 \"$@\"\n",
            **{f"usr/bin/{n}": b"" for n in ("cudafe++", "ptxas", "nvlink", "fatbinary", "bin2c")},
        },
        "nvidia-cuda-dev": {
            "usr/include/cuda_runtime.h": b"",
            "usr/lib/x86_64-linux-gnu/libcudadevrt.a": b"!<arch>\n",
        },
        "libcu++-dev": {"usr/include/nv/target": b"libcu", "usr/include/cuda/std/version": b""},
    }


@pytest.mark.parametrize("version", list(PACKAGED))
def test_a_cuda12_root_from_packages(version, tmp_path, monkeypatch, capsys):
    """install asks apt for exactly the pinned packages through a package list of its own,
    verified by the archive's keyring (Ubuntu's, where the system lacks it, from Debian's
    ubuntu-keyring package, itself verified by Debian's keyring), and makes a root the lookup
    takes: libcu++ from the suite or the cccl wheel, the ptxas flags in nvcc.profile."""
    import dataclasses
    import platform
    import shutil as sh
    import zipfile

    from nqprof.cuda import deb_toolkit as dt
    from nqprof.cuda import wheel_toolkit as wt

    monkeypatch.delenv(wt.ARCHIVE_VARIABLE, raising=False)
    which = sh.which
    monkeypatch.setattr(
        wt.shutil, "which", lambda n, **kw: "/usr/bin/apt-get" if n == "apt-get" else which(n, **kw)
    )
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    debian_keyring = tmp_path / "debian-archive-keyring.gpg"
    debian_keyring.write_bytes(b"DEBIAN KEYS")
    monkeypatch.setattr(dt, "DEBIAN", dataclasses.replace(dt.DEBIAN, keyring=str(debian_keyring)))
    release = dt.DEB_RELEASES[version]
    if release.archive.name == "Ubuntu":  # a system without Ubuntu's keyring
        archive = dataclasses.replace(release.archive, keyring=str(tmp_path / "absent.gpg"))
    else:
        archive = dataclasses.replace(release.archive, keyring=str(debian_keyring))
    monkeypatch.setitem(dt.DEB_RELEASES, version, dataclasses.replace(release, archive=archive))
    members = _fake_packages(version)
    calls = []

    def fake_run(cmd, what, cwd=None):
        if cmd[0] == "apt-get":
            sources = Path(next(c for c in cmd if "sourcelist=" in c).split("=", 1)[1])
            line = sources.read_text()
            keyring = Path(re.search(r"signed-by=(\S+)\]", line).group(1))
            assert keyring.is_file(), f"{keyring} missing when apt reads {line}"
            args = cmd[cmd.index("-q") + 1 :]
            calls.append(("apt-get", args, line, keyring.read_bytes()))
            for spec in args[1:]:  # download
                name, ver = spec.split("=")
                _deb(Path(cwd) / f"{name}_{ver}_amd64.deb", members[name])
        else:  # pip download of the cccl wheel
            calls.append(("pip", cmd[-1]))
            dest = Path(cmd[cmd.index("--dest") + 1])
            dest.mkdir(parents=True)
            with zipfile.ZipFile(dest / "nvidia_cuda_cccl_cu12-1-py3-none-any.whl", "w") as whl:
                whl.writestr("nvidia/cuda_cccl/include/nv/target", "cccl")
                whl.writestr("nvidia/cuda_cccl/__init__.py", "")

    monkeypatch.setattr(dt, "run_quiet", fake_run)
    dest = tmp_path / "env" / "cuda"
    assert wt.install(version, dest) == 0
    line, specs, cccl, flags = PACKAGED[version]
    apt = [c for c in calls if c[0] == "apt-get"]
    if release.archive.name == "Ubuntu":
        debian_line = (
            f"deb [arch=amd64 signed-by={debian_keyring}] http://deb.debian.org/debian "
            "trixie main\n"
        )
        assert apt[:2] == [
            ("apt-get", ["update"], debian_line, b"DEBIAN KEYS"),
            ("apt-get", ["download", UBUNTU_KEYRING_DEB], debian_line, b"DEBIAN KEYS"),
        ]
        apt = apt[2:]
        keyring_used = re.search(r"signed-by=(\S+)\]", apt[0][2]).group(1)
        assert keyring_used.endswith("/keyrings/ubuntu-archive-keyring.gpg")
        keys = b"UBUNTU KEYS"
    else:
        keyring_used, keys = str(debian_keyring), b"DEBIAN KEYS"
    archive_line = line.replace("signed-by=K", f"signed-by={keyring_used}")
    assert apt == [
        ("apt-get", ["update"], archive_line, keys),
        ("apt-get", ["download", *specs], archive_line, keys),
    ]
    assert [c[1] for c in calls if c[0] == "pip"] == (
        [f"nvidia-cuda-cccl-cu12=={cccl}"] if cccl else []
    )
    assert (dest / "include" / "nv" / "target").read_text() == ("cccl" if cccl else "libcu")
    profile = (dest / "bin" / "nvcc.profile").read_text()
    assert f"PTXAS_FLAGS     +={' ' + flags if flags else ''}\n" in profile
    assert "PATH            += $(TOP)/hostcc:" in profile  # the packages' gcc wrappers first
    assert os.access(dest / "hostcc" / "g++", os.X_OK)
    found = tk.find_toolkit({"NQPROF_CUDA_HOME": str(dest), "PATH": ""})
    assert found.version == version and found.cudadevrt == dest / "lib64" / "libcudadevrt.a"
    assert f"CUDA {version} toolkit root {dest} ({release.archive.name} " in capsys.readouterr().out


def test_every_cuda12_release_has_its_tox_environment_and_docs_row():
    """tox.ini builds each packaged release for sm_90 (CUDA 12.0 to 12.6 know no sm_100), and
    docs/toolkits.md's table names its suite and toolkit version."""
    import configparser

    from nqprof.cuda.deb_toolkit import DEB_RELEASES

    root = Path(__file__).resolve().parents[1]
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(root / "tox.ini")

    def expand(text):
        return [
            f"{m.group(1)}{v}"
            for m in re.finditer(r"(\w+)\{([^}]*)\}", text)
            for v in m.group(2).split(",")
        ]

    env_list = expand(tox["tox"]["env_list"])
    section = next(s for s in tox.sections() if s.startswith("testenv:cuda{"))
    archs = tox[section]["set_env"].split("NQPROF_DEFAULT_ARCHS")[0].split("\n")[-1]
    depends = tox["testenv:matrix"]["depends"]
    docs = (root / "docs" / "toolkits.md").read_text()
    for version, release in DEB_RELEASES.items():
        env = f"cuda{version}"
        assert env in env_list and env in expand(section) and env in depends, env
        assert env in archs.split(":")[0].strip().split(","), env
        row = next(r for r in docs.splitlines() if r.startswith(f"| `{env}`"))
        assert f"{release.archive.name} {release.suite}" in row, row
        assert f"nvidia-cuda-toolkit {release.toolkit}" in row, row


def test_a_cuda12_release_without_a_compiler_is_a_skip(tmp_path, capsys, monkeypatch):
    from nqprof.cuda import wheel_toolkit

    monkeypatch.delenv(wheel_toolkit.ARCHIVE_VARIABLE, raising=False)
    assert wheel_toolkit.install("12.6", tmp_path / "cuda") == 0
    out = capsys.readouterr().out
    assert (
        out.startswith("skipped: no CUDA 12.6 compiler to install")
        and "ptxas and libnvvm only" in out
    )
    assert not (tmp_path / "cuda").exists()


def test_a_toolkit_archive_is_checked_for_its_release(tmp_path, monkeypatch, capsys):
    """install unpacks NQPROF_TOOLKIT_ARCHIVE into a root the lookup takes, and refuses an
    archive of another release."""
    import tarfile

    from nqprof.cuda import wheel_toolkit

    src = tmp_path / "src" / "cuda"
    fake_nvcc(src / "bin" / "nvcc", "12.4")
    (src / "include").mkdir()
    (src / "include" / "cuda_runtime.h").write_text("")
    (src / "lib").mkdir()
    (src / "lib" / "libcudadevrt.a").write_bytes(b"!<arch>\n")
    archive = tmp_path / "cuda12.4.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(src, arcname="cuda")
    monkeypatch.setenv(wheel_toolkit.ARCHIVE_VARIABLE, str(archive))
    dest = tmp_path / "env" / "cuda"
    assert wheel_toolkit.install("12.4", dest) == 0
    assert f"CUDA 12.4 toolkit root {dest} (from {archive})" in capsys.readouterr().out
    found = tk.find_toolkit({"NQPROF_CUDA_HOME": str(dest), "PATH": ""})
    assert found.version == "12.4" and found.cudadevrt == dest / "lib64" / "libcudadevrt.a"
    with pytest.raises(UnavailableError, match="is CUDA 12.4, not 12.5"):
        wheel_toolkit.install("12.5", dest)


def test_what_a_toolkit_archive_keeps(tmp_path):
    """pack follows a 13.x root's links to whole folders, keeps what nvcc and nvlink read and
    leaves out other libraries, thrust and cub, and the links install makes again."""
    from nqprof.cuda.wheel_toolkit import _packed_files

    wheels = tmp_path / "site-packages" / "nvidia" / "cu13"
    fake_nvcc(wheels / "bin" / "nvcc", "13.0")
    (wheels / "bin" / "nvdisasm").write_text("")
    for name in ("include/cuda_runtime.h", "include/cccl/cub/cub.cuh", "include/cccl/nv/target"):
        (wheels / name).parent.mkdir(parents=True, exist_ok=True)
        (wheels / name).write_text("")
    (wheels / "lib").mkdir()
    for name in ("libcudadevrt.a", "libcudart.so.13", "libcudart_static.a"):
        (wheels / "lib" / name).write_bytes(b"")
    (wheels / "nvvm" / "bin").mkdir(parents=True)
    (wheels / "nvvm" / "bin" / "cicc").write_text("")
    root = make_root(wheels, tmp_path / "cuda")
    kept = sorted(p.relative_to(root).as_posix() for p in _packed_files(root))
    assert kept == [
        "bin/nvcc",
        "include/cccl/nv/target",
        "include/cuda_runtime.h",
        "lib/libcudadevrt.a",
        "nvvm/bin/cicc",
    ]
