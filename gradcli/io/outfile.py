"""Files gradcli writes (``--output``, ``--plot``, ``--save``), written so that a run never
costs the user a file: the bytes go to a temporary file beside PATH
(``.NAME.XXXXXXXX.partial``), which is renamed over PATH (``os.replace``, atomic) only
when the caller commits it.

- PATH is untouched until then: a run refused or failing before it commits (a bad option,
  a bad first row, a full disk) leaves an existing file as it was, and a reader of PATH
  sees the old file or the new one, never a part of one. Two processes writing PATH end
  with one of their files, complete (the last to commit), never an interleaving.
- The temporary is removed whatever happens: an exception, Ctrl-C, or SIGTERM, which
  while a temporary exists is raised as ``Terminated`` (a ``KeyboardInterrupt``, so the
  cleanup Ctrl-C gets runs too) and ends the process with 143 (128 + 15).
- The new file keeps the permissions (and, where allowed, the owner) of the file it
  replaces; a new file gets those ``open`` would give it (0o666 less the umask). A
  symbolic link at PATH is followed, as writing through it would. A PATH that exists and
  is not a regular file (``/dev/null``, a named pipe), or names a descriptor
  (``/dev/stdout``, ``/dev/fd/3``), is written directly: there is nothing to rename, and
  a stream cannot be taken back.
- Nothing is fsynced: this guards against the program's failures, not the machine's (as
  ``sort -o`` or ``sed -i``); after a power cut the file may be the old one.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "out.txt")
>>> with OutputFile(path) as f:
...     _ = f.write("complete\\n")
>>> open(path).read()
'complete\\n'
>>> import shutil; shutil.rmtree(os.path.dirname(path))
"""
from __future__ import annotations

import os
import signal
import stat
import tempfile

from ..errors import InputError


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program stands while a temporary file exists."""
    exit_code = 143
    word = "terminated"


def _terminate(signum, frame):
    raise Terminated()


_held = 0               # temporaries alive (files and directories)
_previous = None        # (SIGTERM's handler before the first of them,); None: not set


def _hold() -> None:
    """A temporary now exists: SIGTERM raises ``Terminated`` until the last is gone."""
    global _held, _previous
    if _held == 0:
        try:
            _previous = (signal.signal(signal.SIGTERM, _terminate),)
        except ValueError:  # not the main thread, where Python cannot catch signals
            _previous = None
    _held += 1


def _release() -> None:
    global _held
    _held -= 1
    if _held == 0 and _previous is not None:
        signal.signal(signal.SIGTERM, _previous[0] if _previous[0] is not None
                      else signal.SIG_DFL)


def target(path: str, option: str = "--output") -> str:
    """The file ``path`` names (``~`` expanded, a symbolic link followed), refused with
    one message when it is a directory."""
    real = os.path.realpath(os.path.expanduser(path))
    if os.path.isdir(real):
        raise InputError(f"{option} {path}: is a directory, not a file")
    return real


def _in_place(path: str) -> bool:
    """Whether ``path`` is written directly rather than replaced: a file that exists and
    is not a regular file (/dev/null, a named pipe), and any name of a descriptor or a
    device (/dev/stdout, /dev/fd/3, /proc/self/fd/1), whatever it points to now (a
    shell's ``>> log`` must be appended to, not replaced)."""
    if os.path.abspath(path).startswith(("/dev/", "/proc/")):
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _cannot_write(path: str, option: str, err: OSError) -> InputError:
    return InputError(f"{option} {path}: cannot write the file ({err.strerror or err})")


class OutputFile:
    """PATH, written through a temporary file beside it: ``write``/``flush`` (or the
    ``file`` itself), then ``commit()`` to rename it into place, or ``discard()`` to
    remove it (after a commit, a no-op). As a context manager it commits when the block
    ends normally and discards otherwise. Refusals (a directory, a folder that does not
    exist or cannot be written) are an ``InputError`` naming ``option``."""

    def __init__(self, path: str, *, binary: bool = False, option: str = "--output"):
        self.path = target(path, option)
        self.temporary = None
        self.held = False
        mode = "wb" if binary else "w"
        text = {} if binary else {"encoding": "utf-8", "newline": "\n"}
        try:
            if _in_place(os.path.expanduser(path)):  # (closed by commit or discard)
                self.file = open(os.path.expanduser(path), mode, **text)  # noqa: SIM115
                return
            _hold()  # (before the file exists: a SIGTERM from here on removes it)
            self.held = True
            descriptor, self.temporary = tempfile.mkstemp(
                prefix=f".{os.path.basename(self.path)}.", suffix=".partial",
                dir=os.path.dirname(self.path))
            self.file = open(descriptor, mode, **text)  # noqa: SIM115 (as above)
        except BaseException as err:
            self._remove()
            if isinstance(err, OSError):
                raise _cannot_write(path, option, err) from None
            raise

    def write(self, data):
        return self.file.write(data)

    def flush(self) -> None:
        self.file.flush()

    def commit(self) -> None:
        """Close the file and rename it over PATH, with PATH's permissions."""
        if self.file.closed and self.temporary is None:
            return  # (committed or discarded already)
        self.file.close()
        if self.temporary is not None:
            _copy_mode(self.path, self.temporary)
            os.replace(self.temporary, self.path)
            self.temporary = None
        self._remove()

    def discard(self) -> None:
        """Remove the temporary file (PATH is not touched); after a commit, nothing."""
        try:
            self.file.close()
        except OSError:  # (what could not be written is thrown away anyway)
            pass
        self._remove()

    def _remove(self) -> None:
        if self.temporary is not None:
            try:
                os.unlink(self.temporary)
            except FileNotFoundError:
                pass
            self.temporary = None
        if self.held:
            self.held = False
            _release()

    def __enter__(self):
        return self.file

    def __exit__(self, kind, error, trace) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


class ScratchDirectory:
    """A temporary directory beside PATH for a writer's working files (the ``.npz``
    output's arrays), removed by ``remove()`` whatever happened; SIGTERM is raised as
    ``Terminated`` while it exists, as for ``OutputFile``."""

    def __init__(self, path: str, option: str = "--output"):
        real = target(path, option)
        _hold()
        try:
            self.path = tempfile.mkdtemp(prefix=f".{os.path.basename(real)}.",
                                         suffix=".partial", dir=os.path.dirname(real))
        except BaseException as err:
            _release()
            if isinstance(err, OSError):
                raise _cannot_write(path, option, err) from None
            raise

    def remove(self) -> None:
        import shutil
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None
            _release()


def _copy_mode(path: str, temporary: str) -> None:
    """Give ``temporary`` the mode and owner of ``path``, or, where there is no such
    file, the mode ``open`` would have created it with (mkstemp makes it 0o600)."""
    try:
        existing = os.stat(path)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        return
    os.chmod(temporary, stat.S_IMODE(existing.st_mode))
    try:
        os.chown(temporary, existing.st_uid, existing.st_gid)
    except OSError:  # (only root, or the owner to a group of theirs, may)
        pass
