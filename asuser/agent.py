"""The as-the-user agent: the few file operations the services need done in places a user
can write, done by a process that *is* that user.

The root helper (``aipool-helper as-user USER TASK ARG``) checks the account, drops to it
(its groups, gid and uid, in that order; a fresh environment; ``/`` as working directory)
and runs this module in the job runtime's Python with ``-I``. So the kernel applies the
user's rights to everything below, and a link or rename a user swaps in while it runs wins
nothing that user could not already read or write. Data leaves and enters as a tar stream
(POSIX pax, uncompressed) on standard output or input, which the service checks member by
member as it would an uploaded archive; no path crosses the boundary to be opened by the
other side.

Tasks (one argument each, an absolute path)::

    pack   DIR    # DIR's regular files and directories, as a tar stream on stdout
    pack-deref DIR  # the same, following links that stay inside DIR (a hub's cache)
    unpack DIR    # a tar stream on stdin into DIR, made new and complete or not at all
    remove PATH   # PATH and all in it, gone (never following a link)

Every path it is given is reached from ``/`` one component at a time without following a
link (:func:`open_dir`): the roots it serves belong to the service's account, so a compromised
service could otherwise plant a link there and lead the user's process into places of the
user's that the service has no business in. ``pack`` writes links and special files as what
they are; it never follows them, and the receiver refuses them. ``unpack`` accepts regular
files and directories with relative, clean names only, writes into a hidden sibling by
directory descriptors and renames it to DIR when every member is in; it refuses a DIR that
exists. A refusal is one JSON line on stderr, ``{"error": KIND, "path": …, "detail": …}``,
and exit status 2; KIND is one of :data:`ERRORS`, so the service can say it in the reader's
language.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import sys
import tarfile
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import IO, NoReturn

ERRORS = (
    "usage",  # not a task and argument this agent takes
    "missing",  # the path is not there
    "not-directory",  # the path is not a directory
    "unreadable",  # the user may not read it (the kernel said so)
    "exists",  # unpack: the target is there already
    "outside",  # pack-deref: a link that leads out of the directory
    "bad-member",  # unpack: a member that is not a clean file or directory
    "io",  # any other error of the file system (full disk, …)
)
TASKS = ("pack", "pack-deref", "unpack", "remove")
EXIT_REFUSED = 2
CHUNK = 1 << 20
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_WAY = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC  # search rights only
FILE_MODE = 0o640  # the user's; the service group (the run directory's, by setgid) reads
EXEC_MODE = 0o750
DIR_MODE = 0o750


class Refusal(Exception):
    def __init__(self, kind: str, path: str = "", detail: str = "") -> None:
        super().__init__(kind, path, detail)
        self.kind, self.path, self.detail = kind, path, detail


def _fail(exc: Refusal) -> NoReturn:
    line = {"error": exc.kind, "path": exc.path, "detail": exc.detail}
    sys.stderr.write(json.dumps(line, ensure_ascii=False) + "\n")
    sys.stderr.flush()
    raise SystemExit(EXIT_REFUSED)


def _absolute(path: str) -> str:
    if not path.startswith("/") or "\x00" in path or os.path.normpath(path) != path:
        raise Refusal("usage", path, "an absolute, normalised path is needed")
    return path


# --- the way to a path ------------------------------------------------------------------


def open_dir(path: str, *, read: bool = True) -> int:
    """A descriptor of the directory ``path``, reached from ``/`` one component at a time
    without following a link at any of them: whoever may write a directory on the way (the
    service's account owns the roots the helper serves) cannot lead the agent elsewhere. The
    way down needs only search rights (``O_PATH``), as a path does; ``read``: the directory
    itself opened to be listed."""
    names = [p for p in path.split("/") if p]
    fd = os.open("/", _WAY)
    try:
        for i, name in enumerate(names):
            last = i == len(names) - 1
            nxt = os.open(name, _DIR if last and read else _WAY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        if not names and read:
            os.close(fd)
            fd = os.open("/", _DIR)
    except FileNotFoundError:
        os.close(fd)
        raise Refusal("missing", path) from None
    except PermissionError:
        os.close(fd)
        raise Refusal("unreadable", path) from None
    except OSError as exc:  # ELOOP: a link on the way; ENOTDIR: a file on the way
        os.close(fd)
        raise Refusal("not-directory", path, exc.strerror or "") from None
    return fd


# --- pack ------------------------------------------------------------------------------


def pack(directory: str, out: IO[bytes]) -> int:
    """Write ``directory``'s tree to ``out`` as a tar stream; returns the members written."""
    top = open_dir(directory)
    count = 0
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for rel, fd, info in _walk(top, ""):
            member = tarfile.TarInfo(rel)
            member.mode = stat.S_IMODE(info.st_mode)
            member.mtime = int(info.st_mtime)
            if stat.S_ISDIR(info.st_mode):
                member.type = tarfile.DIRTYPE
                tar.addfile(member)
            elif stat.S_ISREG(info.st_mode) and fd is not None:
                member.size = info.st_size
                with os.fdopen(fd, "rb") as stream:
                    tar.addfile(member, _Exactly(stream, info.st_size, rel))
            elif stat.S_ISLNK(info.st_mode):
                member.type = tarfile.SYMTYPE  # named as what it is; the receiver refuses it
                tar.addfile(member)
            else:
                member.type = tarfile.FIFOTYPE  # a device, socket or pipe: refused likewise
                tar.addfile(member)
            count += 1
    return count


def _walk(dir_fd: int, prefix: str) -> Iterator[tuple[str, int | None, os.stat_result]]:
    """Every entry under ``dir_fd``, sorted, by descriptors; regular files come opened."""
    try:
        names = sorted(os.listdir(dir_fd))
    except PermissionError:
        os.close(dir_fd)
        raise Refusal("unreadable", prefix or ".") from None
    try:
        for name in names:
            rel = f"{prefix}{name}"
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # gone since the listing: a job still writing
            if stat.S_ISDIR(info.st_mode):
                try:
                    sub = os.open(name, _DIR, dir_fd=dir_fd)
                except PermissionError:
                    raise Refusal("unreadable", rel) from None
                except OSError:
                    continue  # swapped for something else meanwhile: the next walk sees it
                yield rel, None, os.fstat(sub)
                yield from _walk(sub, rel + "/")
            elif stat.S_ISREG(info.st_mode):
                try:
                    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
                except PermissionError:
                    raise Refusal("unreadable", rel) from None
                except OSError:
                    continue
                opened = os.fstat(fd)
                if not stat.S_ISREG(opened.st_mode):
                    os.close(fd)
                    yield rel, None, opened
                    continue
                yield rel, fd, opened
            else:
                yield rel, None, info
    finally:
        os.close(dir_fd)


class _Exactly:
    """A file's first ``size`` bytes (the size tar's header promised): a file that grows
    meanwhile is cut there, one that shrinks is padded with zeros."""

    def __init__(self, stream: IO[bytes], size: int, rel: str) -> None:
        self.stream, self.left, self.rel = stream, size, rel

    def read(self, n: int = -1) -> bytes:
        want = self.left if n < 0 else min(n, self.left)
        if want <= 0:
            return b""
        try:
            data = self.stream.read(want)
        except PermissionError:
            raise Refusal("unreadable", self.rel) from None
        if not data:
            data = b"\0" * want
        self.left -= len(data)
        return data


def pack_deref(directory: str, out: IO[bytes]) -> int:
    """Like :func:`pack`, but links are followed while they lead to something inside
    ``directory`` (a Hugging Face cache's snapshot links to its blobs); one that leads out is
    refused. Each directory is entered once, however many links lead to it."""
    fd = open_dir(directory)  # no link on the way to it; inside, the links of its own tree
    try:
        os.fchdir(fd)
    finally:
        os.close(fd)
    top = os.getcwd()
    count, seen = 0, set()
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for root, dirs, files in os.walk(".", followlinks=True, onerror=_unreadable):
            real_root = os.path.realpath(root)
            info = os.stat(real_root)
            if (info.st_dev, info.st_ino) in seen:
                dirs[:] = []
                continue
            seen.add((info.st_dev, info.st_ino))
            for name in sorted(dirs + files):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, ".")
                real = os.path.realpath(path)
                if real != top and not real.startswith(top + os.sep):
                    raise Refusal("outside", rel, "a link out of the directory")
                try:
                    st = os.stat(real)
                except OSError:
                    continue  # a dangling link
                member = tarfile.TarInfo(rel)
                member.mode, member.mtime = stat.S_IMODE(st.st_mode), int(st.st_mtime)
                if stat.S_ISDIR(st.st_mode):
                    member.type = tarfile.DIRTYPE
                    tar.addfile(member)
                elif stat.S_ISREG(st.st_mode):
                    try:
                        stream = open(real, "rb")  # noqa: SIM115 - closed just below
                    except PermissionError:
                        raise Refusal("unreadable", rel) from None
                    with stream:
                        member.size = os.fstat(stream.fileno()).st_size
                        tar.addfile(member, _Exactly(stream, member.size, rel))
                else:
                    member.type = tarfile.FIFOTYPE
                    tar.addfile(member)
                count += 1
    return count


def _unreadable(exc: OSError) -> None:
    raise Refusal("unreadable", str(exc.filename or ""), exc.strerror or "")


# --- unpack ----------------------------------------------------------------------------


def clean_name(name: str) -> tuple[str, ...]:
    """A member's name as path parts, or a refusal: relative, no ``..``, no control
    characters, no backslash."""
    if not name or "\\" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise Refusal("bad-member", name, "an empty name or control characters")
    pure = PurePosixPath(name)
    if pure.is_absolute():
        raise Refusal("bad-member", name, "an absolute path")
    parts = tuple(p for p in pure.parts if p not in ("", "."))
    if ".." in parts:
        raise Refusal("bad-member", name, "'..' in the path")
    return parts


def unpack(directory: str, src: IO[bytes]) -> int:
    """Unpack the tar stream ``src`` into the new directory ``directory``; returns the number
    of files written. The tree appears there whole, or not at all."""
    parent, name = os.path.split(directory)
    parent_fd = open_dir(parent, read=False)
    try:
        if _exists(parent_fd, name):
            raise Refusal("exists", directory)
        partial = f".{name}.{secrets.token_hex(6)}"
        os.mkdir(partial, DIR_MODE, dir_fd=parent_fd)
        try:
            files = _fill(os.open(partial, _DIR, dir_fd=parent_fd), src)
            try:
                os.rename(partial, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
            except OSError as exc:
                if _exists(parent_fd, name):
                    raise Refusal("exists", directory) from None
                raise Refusal("io", directory, exc.strerror or "") from None
        except BaseException:
            with contextlib.suppress(OSError):
                _remove_at(parent_fd, partial)
            raise
        return files
    finally:
        os.close(parent_fd)


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _fill(top: int, src: IO[bytes]) -> int:
    files = 0
    try:
        with tarfile.open(fileobj=src, mode="r|") as tar:
            for member in tar:
                parts = clean_name(member.name)
                if not parts:
                    continue  # "./"
                if member.isdir():
                    _close(_descend(top, parts, member.name))
                    continue
                if not member.isfile():
                    raise Refusal("bad-member", member.name, "not a file or directory")
                where = _descend(top, parts[:-1], member.name)
                try:
                    _write(where, parts[-1], tar, member)
                finally:
                    _close(where, top)
                files += 1
    except tarfile.TarError as exc:
        raise Refusal("bad-member", "", str(exc)) from None
    finally:
        os.close(top)
    return files


def _descend(top: int, parts: tuple[str, ...], name: str) -> int:
    """The directory ``parts`` under ``top`` (made where missing), opened without a link."""
    fd = top
    for part in parts:
        with contextlib.suppress(FileExistsError):
            os.mkdir(part, DIR_MODE, dir_fd=fd)
        try:
            nxt = os.open(part, _DIR, dir_fd=fd)
        except OSError:
            _close(fd, top)
            raise Refusal("bad-member", name, "a file and a directory of the same name") from None
        _close(fd, top)
        fd = nxt
    return fd


def _close(fd: int, keep: int = -1) -> None:
    if fd != keep:
        os.close(fd)


def _write(dir_fd: int, name: str, tar: tarfile.TarFile, member: tarfile.TarInfo) -> None:
    mode = EXEC_MODE if member.mode & 0o100 else FILE_MODE
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, mode, dir_fd=dir_fd)
    except FileExistsError:
        raise Refusal("bad-member", member.name, "given twice") from None
    stream = tar.extractfile(member)
    with os.fdopen(fd, "wb") as out:
        while stream is not None and (chunk := stream.read(CHUNK)):
            out.write(chunk)


# --- remove ----------------------------------------------------------------------------


def remove(path: str) -> bool:
    """Remove ``path`` and all in it, by descriptors; False when it was not there."""
    parent, name = os.path.split(path)
    try:
        parent_fd = open_dir(parent, read=False)
    except Refusal as exc:
        if exc.kind == "missing":
            return False
        raise
    try:
        if not _exists(parent_fd, name):
            return False
        _remove_at(parent_fd, name)
        return True
    finally:
        os.close(parent_fd)


def _remove_at(dir_fd: int, name: str) -> None:
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return
    sub = os.open(name, _DIR, dir_fd=dir_fd)
    try:
        for child in os.listdir(sub):
            _remove_at(sub, child)
    finally:
        os.close(sub)
    os.rmdir(name, dir_fd=dir_fd)


# --- the command -----------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        if len(args) != 2 or args[0] not in TASKS:
            raise Refusal("usage", "", "pack DIR | pack-deref DIR | unpack DIR | remove PATH")
        task, path = args[0], _absolute(args[1])
        if task in ("pack", "pack-deref"):
            (pack if task == "pack" else pack_deref)(path, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        elif task == "unpack":
            print(unpack(path, sys.stdin.buffer))
        else:
            print("removed" if remove(path) else "absent")
    except Refusal as exc:
        _fail(exc)
    except BrokenPipeError:
        return EXIT_REFUSED  # the reader stopped (a budget ran out): nothing to say
    except OSError as exc:
        _fail(Refusal("io", getattr(exc, "filename", None) or "", exc.strerror or str(exc)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
