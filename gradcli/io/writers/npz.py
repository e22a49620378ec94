"""``--output PATH.npz`` with ``--at``: numpy arrays with a leading row axis, spooled to
temporary files a chunk at a time and assembled into the archive at the end."""
from __future__ import annotations

import os

import numpy as np

from ...errors import GradcliError, InputError
from ..points import BadRow
from .base import WRITE_ROWS, Writer


class NpzWriter(Writer):
    """``--output PATH.npz``: the rows as numpy arrays, each with a leading row axis, in
    this order: ``row`` (int64), the kept columns (``--keep``: strings, the text as it
    is), the point (each name the source sets, float64, its value at the row), ``value``
    (where the command gives one), one array per output as the CSV header names them
    (``d_x``; ``jacobian``'s ``d_x`` of shape (N, *target, *source); ``hessian``'s
    ``gradient``, ``hessian``, ``eigenvalues`` and ``verdict``; ``jvp``'s ``jvp``),
    ``error`` (bool: a row ``--skip-bad-rows`` recorded; its numbers
    are nan, its words empty) and ``error_message`` (the messages of those rows, in row
    order). An unconnected gradient (``null`` in JSON) has no array. The numbers are the
    computed ones (no text in between: ``--precision`` does not apply)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.npz = self.out
        self.outputs = None   # name -> _Spool, made at the first computed rows
        self.pending = 0      # bad rows before then (their output rows are blank)

    def _fields(self, layout, res) -> dict:
        kind = self.kind
        fields = {"value": res.value} if layout.has_value else {}
        for name, g in zip(layout.names, res.grads):
            fields[f"{kind.prefix}{name}"] = g
        if kind.word:
            fields[kind.word] = np.array(res.words, dtype=f"<U{kind.word_width}")
        return fields

    def write(self, res) -> None:
        npz, n = self.npz, res.n
        fields = self._fields(self.layout_of(), res)
        if self.outputs is None:
            self.outputs = {}
            npz.check_names(list(fields))
            for name, a in fields.items():
                if a is not None:
                    self.outputs[name] = npz.spool(name, a.dtype, a.shape[1:])
                    self.outputs[name].blank(self.pending)
        npz.base["row"].write(np.arange(res.start, res.start + n, dtype=np.int64))
        for k, label in enumerate(self.kept):
            npz.texts[label].write(res.kept[:, k].tolist())
        for name in npz.names:
            npz.base[name].write(res.values[name])
        for name, spool in self.outputs.items():
            a = fields.get(name)
            if a is None:
                spool.blank(n)
            else:
                spool.write(a)
        npz.base["error"].write(np.zeros(n, dtype=bool))
        self.rows += n

    def bad(self, row: BadRow) -> None:
        npz = self.npz
        npz.base["row"].write(np.array([row.row], dtype=np.int64))
        for k, label in enumerate(self.kept):
            npz.texts[label].write([row.kept[k] if row.kept is not None else ""])
        for name in npz.names:
            npz.base[name].blank(1)
        if self.outputs is None:
            self.pending += 1
        else:
            for spool in self.outputs.values():
                spool.blank(1)
        npz.base["error"].write(np.ones(1, dtype=bool))
        npz.message(row.message)
        self.bad_rows += 1

    def start(self, res, point: list) -> None:
        try:
            super().start(res, point)
        except GradcliError:
            self.npz.refused = True   # (no .npz at all)
            raise

    def flush(self) -> None:
        pass

    def finish(self) -> None:
        self.npz.assemble(self.rows + self.bad_rows, self.bad_rows,
                          list(self.outputs or {}))

    def stopped(self) -> None:
        """The run stopped (a bad row, Ctrl-C): the .npz of the rows completed so far
        (none at all when its names were refused)."""
        if self.npz.refused:
            self.npz.discard()
        else:
            self.finish()


class _Spool:
    """One array's rows streamed to a file of raw C-order data; its .npy header, which
    needs the number of rows, is written when the .npz is assembled."""

    def __init__(self, path: str, dtype, shape: tuple):
        self.path, self.dtype, self.shape = path, np.dtype(dtype), tuple(int(k) for k in shape)
        self.fill = (np.nan if self.dtype.kind in "fc" else "" if self.dtype.kind == "U"
                     else 0)
        self.file = open(path, "wb")

    @property
    def row_bytes(self) -> int:
        return self.dtype.itemsize * int(np.prod(self.shape, dtype=np.int64))

    def write(self, arr) -> None:
        arr = np.ascontiguousarray(arr, dtype=self.dtype)
        self.file.write(arr.reshape(-1).view(np.uint8).data if arr.size else b"")

    def blank(self, n: int) -> None:
        while n > 0:
            k = min(n, WRITE_ROWS)
            self.write(np.full((k, *self.shape), self.fill, dtype=self.dtype))
            n -= k


class _TextSpool:
    """An array of strings streamed to a file (each text UTF-8, after its length), made
    a ``<U{longest}`` array when the .npz is assembled (the longest is known only then)."""

    def __init__(self, path: str):
        self.file = open(path, "wb")
        self.width = 1

    def write(self, texts) -> None:
        for text in texts:
            data = text.encode("utf-8")
            self.width = max(self.width, len(text))
            self.file.write(len(data).to_bytes(4, "little") + data)

    def copy(self, member, count: int) -> None:
        """The first ``count`` texts into ``member`` as a .npy array."""
        dtype = np.dtype(f"<U{self.width}")
        _npy_header(member, dtype, (count,))
        with open(self.file.name, "rb") as f:
            for at in range(0, count, WRITE_ROWS):
                texts = []
                for _ in range(min(WRITE_ROWS, count - at)):
                    size = int.from_bytes(f.read(4), "little")
                    texts.append(f.read(size).decode("utf-8"))
                member.write(np.array(texts, dtype=dtype).tobytes())


class NpzOutput:
    """Where ``NpzWriter`` puts its arrays: a temporary directory beside PATH (one file
    per array, so memory does not grow with the rows), assembled at the end as
    ``np.savez`` would store the same arrays (zip entries STORED, zip64) into an
    ``OutputFile`` renamed into place; the directory is removed whatever happens."""

    def __init__(self, path: str, names: list, shapes: dict, kept: list = ()):
        from ..outfile import ScratchDirectory
        self.shown = self.path = path
        self.names = list(names)
        self.refused = False
        self.scratch = ScratchDirectory(path)
        self.tmp = self.scratch.path
        self._spools: dict = {}
        self.base = {"row": self.spool("row", np.int64, ())}
        for name in self.names:
            self.base[name] = self.spool(name, np.float64, shapes[name])
        self.base["error"] = self.spool("error", np.bool_, ())
        # Text arrays: the kept columns (--keep), then the messages of the bad rows.
        self.texts = {label: _TextSpool(os.path.join(self.tmp, f"kept{k}.txt"))
                      for k, label in enumerate(kept)}
        self.messages = self.texts["error_message"] = _TextSpool(
            os.path.join(self.tmp, "error_message.txt"))

    def spool(self, name: str, dtype, shape) -> _Spool:
        """A new array ``name`` (rows of ``shape``), in a file of its own."""
        spool = _Spool(os.path.join(self.tmp, f"{len(self._spools)}.bin"), dtype, shape)
        self._spools[name] = spool
        return spool

    def check_names(self, outputs: list) -> None:
        """Every array needs its own name: a point's name may not be an output's."""
        names = ["row", *self.texts, *self.names, *outputs, "error"]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            self.refused = True
            raise InputError(f"--output {self.shown}: the source sets {', '.join(twice)}, a "
                             "name .npz output gives an array of its own (row, value, "
                             "d_NAME, error...): rename it in the program, or write .jsonl "
                             "or .csv")

    def message(self, text: str) -> None:
        self.messages.write([text])

    def assemble(self, rows: int, bad_rows: int, outputs: list) -> None:
        """Write PATH: ``rows`` rows of every array (what the spools hold beyond them,
        a chunk cut short by Ctrl-C, is left out), then remove the directory."""
        import zipfile

        from ..outfile import OutputFile
        for spool in [*self._spools.values(), *self.texts.values()]:
            spool.file.close()
        kept = [label for label in self.texts if label != "error_message"]
        try:
            with OutputFile(self.path, binary=True) as target, \
                    zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED,
                                    allowZip64=True) as archive:
                for name in ["row", *kept, *self.names, *outputs, "error", "error_message"]:
                    with archive.open(name + ".npy", "w", force_zip64=True) as member:
                        if name in self.texts:
                            self.texts[name].copy(member, bad_rows if name == "error_message"
                                                  else rows)
                            continue
                        spool = self._spools[name]
                        _npy_header(member, spool.dtype, (rows, *spool.shape))
                        with open(spool.path, "rb") as f:
                            _copy(f, member, rows * spool.row_bytes)
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the temporary directory (PATH itself is not touched)."""
        for spool in [*self._spools.values(), *self.texts.values()]:
            spool.file.close()
        self.scratch.remove()


def _npy_header(f, dtype: np.dtype, shape: tuple) -> None:
    """The .npy header np.save writes for a C-order array of ``dtype`` and ``shape``."""
    np.lib.format.write_array_header_1_0(f, {
        "descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
        "shape": tuple(int(k) for k in shape)})


def _copy(source, target, size: int) -> None:
    while size > 0:
        block = source.read(min(size, 1 << 20))
        if not block:
            raise OSError("a temporary file of the .npz output ended early")
        target.write(block)
        size -= len(block)
