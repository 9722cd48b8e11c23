"""What ccbench reads and writes on a user's behalf, within bounds.

- Input files (scenarios, suites, a suite's base and parts) are read only if
  they are regular files or pipes, and at most :data:`MAX_INPUT_BYTES`: a
  device such as ``/dev/zero`` or a runaway file is refused, not read until
  memory runs out.
- Ids become file names through :func:`file_name` (the core's mapping), so a
  link id such as ``"../../x"`` names a file inside the result directory.
- A run works in a hidden directory beside its result
  (:func:`work_dir`): locked while the run lives, removed when it ends, and
  removed by the next run into the same place if its run was killed.
- :func:`check_free_space` refuses a run whose estimated output does not fit
  on the disk.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MAX_INPUT_BYTES", "check_free_space", "file_name", "read_input", "work_dir", "write_atomic"]

#: Largest scenario or suite file read: ten times a 10 000-flow scenario.
MAX_INPUT_BYTES = 16 << 20

#: A result directory is complete once it holds this file (written last).
SUMMARY_FILE = "summary.json"
#: In a run's work directory: the result being written, and a previous one set aside while it is replaced.
NEW_DIR, OLD_DIR = "result", "old"

#: The work directory's name beside a result ``NAME``: ``.NAME.tmp-spill-XXXX``
#: (".tmp-" lets a sweep's tidying clear it too).
_WORK = ".{name}.tmp-spill-"


def read_input(path: str | os.PathLike[str], what: str = "scenario") -> bytes:
    """The bytes of a file the user named, refused (OSError naming the file) if
    it is a directory or a device, or larger than :data:`MAX_INPUT_BYTES`."""
    st = os.stat(path)  # FileNotFoundError / PermissionError as they are
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"is a directory, not a {what} file", os.fspath(path))
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        raise OSError(errno.EINVAL, f"not a regular file (a {what} is read from a file or a pipe)", os.fspath(path))
    too_big = OSError(errno.EFBIG, f"larger than {MAX_INPUT_BYTES >> 20} MiB: not a {what} file", os.fspath(path))
    if st.st_size > MAX_INPUT_BYTES:
        raise too_big
    with open(path, "rb") as f:
        data = f.read(MAX_INPUT_BYTES + 1)  # a pipe, or a file that grew
    if len(data) > MAX_INPUT_BYTES:
        raise too_big
    return data


def file_name(id: str) -> str:
    """A file name (without extension) for a scenario id: the id when it is
    plain (letters, digits, ``_``, ``-``, ``.`` not first), else each other
    byte as ``%XX``; never a path, never hidden, at most 200 bytes."""
    from ccbench import _core

    return _core.file_name(id)


@contextlib.contextmanager
def work_dir(target: str | os.PathLike[str]) -> Iterator[Path]:
    """A hidden directory beside ``target`` (same file system, so results move
    into place by renaming) for a run's tables and its result before it is
    complete; removed on exit, however the run ends but SIGKILL.

    It holds an OS lock (``flock``) while in use, so a later run into the same
    place can tell a killed run's directory from a live one's, and removes the
    former first (putting back a previous result the killed run had set aside).
    Parent directories created here are removed again if the run fails, and a
    place that cannot hold a directory is reported as the target's problem.
    """
    target = Path(target)
    created = _make_parents(target)
    path: Path | None = None
    fd: int | None = None
    try:
        clear_dead(target)
        # The name is chosen before the directory exists, so a signal between
        # creating it and recording it cannot leave it behind.
        # (os.urandom rather than the `secrets` module, which takes 10-17 ms to import.)
        while True:
            path = target.parent / (_WORK.format(name=target.name) + os.urandom(4).hex())
            try:
                os.mkdir(path, 0o700)
                break
            except FileExistsError:
                continue
            except OSError as e:
                path = None
                raise OSError(e.errno, f"cannot write a result here: {_lower(e.strerror or str(e))}",
                              str(target)) from None
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield path
    except BaseException:
        if path is not None:  # removed before the parents it may be in
            _remove(path)
            path = None
        for d in reversed(created):
            with contextlib.suppress(OSError):
                d.rmdir()  # only if still empty
        raise
    finally:
        if path is not None:
            _remove(path)
        if fd is not None:
            os.close(fd)


def _remove(path: Path) -> None:
    """Remove a work directory, finishing the job if a signal (SIGTERM's
    ``Terminated``, Ctrl-C) interrupts it before passing that on."""
    try:
        shutil.rmtree(path, ignore_errors=True)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise


def clear_dead(target: Path) -> None:
    """Remove the work directories of runs into ``target`` that are gone
    (killed: nobody holds their lock), after restoring a result one of them
    had set aside while replacing it."""
    parent = target.parent
    prefix = _WORK.format(name=target.name)
    try:
        entries = [p for p in parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return
    for p in entries:
        try:
            fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live run's
            old = p / OLD_DIR
            if not target.exists() and (old / SUMMARY_FILE).is_file():
                with contextlib.suppress(OSError):
                    os.replace(old, target)
            shutil.rmtree(p, ignore_errors=True)
        finally:
            os.close(fd)


def _make_parents(target: Path) -> list[Path]:
    """Create ``target``'s missing parents; return those created, outermost first."""
    missing = []
    for d in [target.parent, *target.parent.parents]:
        if d.exists():
            break
        missing.append(d)
    created = []
    try:
        for d in reversed(missing):
            d.mkdir()
            created.append(d)
    except OSError as e:
        for d in reversed(created):
            with contextlib.suppress(OSError):
                d.rmdir()
        raise OSError(e.errno, f"cannot create the result's directory: {_lower(e.strerror or str(e))}", str(target)) from None
    return created


def check_free_space(target: str | os.PathLike[str], disk_bytes: float) -> None:
    """Refuse (OSError ENOSPC naming ``target``) a run estimated to write more than the
    free space where ``target`` goes, before it starts."""
    where = Path(target).parent
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        usage = shutil.disk_usage(where)
    except OSError:
        return  # nothing to measure: the writes will say
    free = usage.free
    if usage.total == 0:
        return  # a pseudo file system (/proc): creating the directory will say
    if disk_bytes > free:
        raise OSError(errno.ENOSPC, f"this run would write about {_size(disk_bytes)} (estimated), but only "
                                    f"{_size(free)} is free there; free space, or lower what it records "
                                    "(metrics.interval, metrics.sojourn_every, metrics.rtt_samples)", str(target))


def _size(b: float) -> str:
    return f"{b / (1 << 30):.1f} GiB" if b >= 1 << 30 else f"{b / (1 << 20):.0f} MiB"


def _lower(reason: str) -> str:
    return reason[:1].lower() + reason[1:]


def write_atomic(path: Path, text: str) -> None:
    """Write a text file so that readers see the old or the new file, never a part."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
