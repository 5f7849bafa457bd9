"""Arrow columns of byte slices of one buffer, with no per-value work in Python: binary views, then one cast.

A ZooKeeper file's paths and data are length-prefixed slices of its bytes. ``slices`` makes an Arrow
``binary_view`` array that points into the buffer (16 bytes a value: its length, then the value itself when it
fits in 12 bytes, else its first 4 bytes, a buffer index and an offset) and lets Arrow copy the values out compact.
Used by the snapshot decoder (``snapdecode``) and the change table's decoder (``txncolumns``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

VIEW_INLINE = 12  # Arrow's binary_view: values up to 12 bytes sit in the view itself
VIEW_BUFFER_SPAN = 1 << 30  # each data buffer of a view array starts at a multiple of this (offsets are int32)


def heads(raw: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The 12 bytes at each of ``starts``, zero-padded where ``raw`` ends sooner."""
    inside = starts <= len(raw) - VIEW_INLINE
    if inside.all():
        return np.lib.stride_tricks.sliding_window_view(raw, VIEW_INLINE)[starts]
    head = np.zeros((len(starts), VIEW_INLINE), dtype=np.uint8)
    if len(raw) >= VIEW_INLINE:
        head[inside] = np.lib.stride_tricks.sliding_window_view(raw, VIEW_INLINE)[starts[inside]]
    for row in np.flatnonzero(~inside).tolist():
        tail = raw[int(starts[row]):]
        head[row, :len(tail)] = tail
    return head


def views(head: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Arrow binary views of the slices ``raw[start:start + length]`` (``head``: their first 12 bytes, see
    ``heads``), as an (rows, 4) int32 array: length, then the value if it fits in 12 bytes, else its first 4
    bytes, buffer index and offset (buffer k holds ``raw`` from k × 2^30 on). Lengths must be under 2^30."""
    rows = len(starts)
    result = np.empty((rows, 4), dtype="<i4")
    result[:, 0] = lengths
    inline = result.view(np.uint8).reshape(rows, 16)[:, 4:]
    np.multiply(head, np.arange(VIEW_INLINE) < lengths[:, None], out=inline)
    long_values = lengths > VIEW_INLINE
    result[:, 2] = np.where(long_values, starts // VIEW_BUFFER_SPAN, result[:, 2])
    result[:, 3] = np.where(long_values, starts % VIEW_BUFFER_SPAN, result[:, 3])
    return result


def view_array(view_rows: np.ndarray, buffer: pa.Buffer, valid: np.ndarray | None = None) -> pa.Array:
    """A binary_view array of ``view_rows`` (see ``views``) into ``buffer`` (no copy of the values)."""
    rows, size = len(view_rows), buffer.size
    spans = max(1, -(-size // VIEW_BUFFER_SPAN))
    data_buffers = [buffer.slice(span * VIEW_BUFFER_SPAN, min(size - span * VIEW_BUFFER_SPAN, 2 * VIEW_BUFFER_SPAN))
                    for span in range(spans)]
    validity = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    null_count = 0 if valid is None else int(rows - np.count_nonzero(valid))
    return pa.Array.from_buffers(pa.binary_view(), rows, [validity, pa.py_buffer(view_rows), *data_buffers],
                                 null_count=null_count)


def slices(raw: np.ndarray, buffer: pa.Buffer, starts: np.ndarray, lengths: np.ndarray, valid: np.ndarray,
           kind: pa.DataType) -> pa.Array:
    """The ``lengths`` bytes at each of ``starts`` in ``raw`` (``buffer``: the same bytes as an Arrow buffer) as a
    compact array of ``kind`` (string or binary), null where not ``valid``."""
    lengths = np.where(valid, lengths, 0)
    starts = np.where(valid, starts, 0)
    array = view_array(views(heads(raw, starts), starts, lengths), buffer, valid=valid)
    return array.cast(kind)
