"""Compiles a message definition at one version into a decode and an encode function, as Kafka's generator does.

Interpreting the field list for every record would cost tens of microseconds a record; instead each (message,
version) is turned once into straight-line Python (runs of fixed-size fields read with one ``struct``, varints read
inline when they fit one byte) and ``exec``-ed. Only flexible versions exist for KRaft records, so the generated
code knows compact strings/bytes/arrays and tagged-field sections only.

Decoding gives a dict of every field of the message by its JSON name (fields absent at the version, and absent
tagged fields, hold their default, as Kafka's generated objects do); unknown tags are kept, in order, under
``UNKNOWN_TAGS`` as ``(tag, bytes)`` pairs so that encoding gives the same bytes back.
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_zk_audit.snapshot.kraft.schema import Field, Message, default_value
from kafka_zk_audit.snapshot.kraft.wire import DecodeError, read_uvarint_tail, uuid_from_str, uuid_to_str, write_uvarint

UNKNOWN_TAGS = "_unknownTaggedFields"  # the name Kafka's generated classes give them
FIXED = {"bool": ("?", 1), "int8": ("b", 1), "int16": ("h", 2), "int32": ("i", 4), "int64": ("q", 8),
         "uint16": ("H", 2), "float64": ("d", 8), "uuid": ("16s", 16)}

Decoder = Callable[[bytes, int], tuple[dict[str, Any], int]]
Encoder = Callable[[dict[str, Any], bytearray], None]


@dataclass(frozen=True, slots=True)
class MessageCodec:
    """A message at one version: ``decode(value, position) → (fields, end)``, ``encode(fields, out)``."""

    message: Message
    version: int
    decode: Decoder
    encode: Encoder
    source: str  # the generated Python, for reading and debugging


def compile_message(message: Message, version: int) -> MessageCodec:
    """The decode/encode pair of ``message`` at ``version``."""
    generator = _Generator(message, version)
    decode_name = generator.decoder(message.fields, "message")
    encode_name = generator.encoder(message.fields, "message")
    source = "\n".join(generator.lines) + "\n"
    namespace = dict(generator.constants)
    exec(compile(source, f"<kraft {message.name} v{version}>", "exec"), namespace)  # noqa: S102 - our own source
    return MessageCodec(message, version, namespace[decode_name], namespace[encode_name], source)


def _uvarint(var: str, pad: str) -> list[str]:
    """Inline read of an unsigned varint into ``var`` (one byte, the usual case, without a call)."""
    return [f"{pad}{var} = v[p]", f"{pad}p += 1", f"{pad}if {var} > 127:", f"{pad}    {var}, p = _uvt(v, p, {var})"]


class _Generator:
    """Emits the functions of one message at one version, nested structs first."""

    def __init__(self, message: Message, version: int) -> None:
        self.message = message
        self.version = version
        self.structs = {struct.name: struct for struct in message.common_structs}
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {
            "_uvt": read_uvarint_tail, "_wuv": write_uvarint, "_uuid": uuid_to_str, "_ub": uuid_from_str,
            "_E": DecodeError, "_unpack": struct.unpack_from, "_pack": struct.pack, "UNKNOWN": UNKNOWN_TAGS,
            "_deepcopy": copy.deepcopy,
        }
        self.counter = 0

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _constant(self, value: Any) -> str:
        name = self._name("_c")
        self.constants[name] = value
        return name

    def _struct_fields(self, field: Field) -> tuple[Field, ...]:
        if field.fields:
            return field.fields
        if field.element_type in self.structs:
            return self.structs[field.element_type].fields
        raise ValueError(f"{self.message.name}.{field.name}: unknown type {field.type}")

    def _default(self, field: Field) -> str:
        value = default_value(field, self.structs)
        if value is None or isinstance(value, (bool, int, float, str)):
            return repr(value)
        return f"_deepcopy({self._constant(value)})" if isinstance(value, dict) else "[]"

    # -- decoding ----------------------------------------------------------------------------------------------

    def decoder(self, fields: tuple[Field, ...], what: str) -> str:
        version = self.version
        nested = {field.name: self.decoder(self._struct_fields(field), field.name)
                  for field in fields if field.present_at(version) and field.is_struct}
        name = self._name("_decode_")
        body: list[str] = []
        run: list[tuple[str, Field]] = []
        locals_: dict[str, str] = {}
        for index, field in enumerate(fields):
            var = f"f{index}"
            locals_[field.name] = var
            if not field.present_at(version):
                body.append(f"    {var} = {self._default(field)}")
            elif field.tagged_at(version):
                body.append(f"    {var} = {self._default(field)}")
            elif not field.is_array and field.type in FIXED:
                run.append((var, field))
                continue
            else:
                body += self._flush_run(run)
                body += self._read(field, var, nested.get(field.name), "    ")
        body += self._flush_run(run)
        body += self._read_tagged(fields, locals_, nested)
        items = ", ".join(f"{field.name!r}: {locals_[field.name]}" for field in fields)
        self.lines.append(f"def {name}(v, p):  # {self.message.name} v{version}: {what}")
        self.lines += body or ["    pass"]
        self.lines.append(f"    d = {{{items}}}")
        self.lines.append("    if u:")
        self.lines.append("        d[UNKNOWN] = u")
        self.lines.append("    return d, p")
        return name

    def _flush_run(self, run: list[tuple[str, Field]]) -> list[str]:
        if not run:
            return []
        layout = struct.Struct(">" + "".join(FIXED[field.type][0] for _, field in run))
        lines = [f"    {', '.join(var for var, _ in run)}, = {self._constant(layout)}.unpack_from(v, p)",
                 f"    p += {layout.size}"]
        lines += [f"    {var} = _uuid({var})" for var, field in run if field.type == "uuid"]
        run.clear()
        return lines

    def _read(self, field: Field, var: str, nested: str | None, pad: str) -> list[str]:
        """Lines that read one non-fixed field (or a fixed one, when tagged) into ``var``."""
        kind = field.element_type
        if not field.is_array and kind in FIXED:
            layout = self._constant(struct.Struct(">" + FIXED[kind][0]))
            lines = [f"{pad}{var}, = {layout}.unpack_from(v, p)", f"{pad}p += {FIXED[kind][1]}"]
            return lines + ([f"{pad}{var} = _uuid({var})"] if kind == "uuid" else [])
        if not field.is_array and nested:
            return [f"{pad}{var}, p = {nested}(v, p)"]
        null = (f"{pad}    {var} = None" if field.nullable_at(self.version)
                else f"{pad}    raise _E('non-nullable field {field.name} was serialized as null')")
        lines = _uvarint("n", pad) + [f"{pad}if n == 0:", null, f"{pad}else:", f"{pad}    n -= 1"]
        inner = pad + "    "
        if not field.is_array:
            decode = ".decode()" if kind == "string" else ""
            return lines + [f"{inner}{var} = v[p:p + n]{decode}", f"{inner}p += n"]
        lines.append(f"{inner}if n > len(v) - p:")
        lines.append(f"{inner}    raise _E('array {field.name} claims {{}} elements, more than the bytes left'"
                     ".format(n))")
        if kind in FIXED and kind != "uuid":
            code, size = FIXED[kind]
            return lines + [f"{inner}{var} = list(_unpack('>%d{code}' % n, v, p)) if n else []",
                            f"{inner}p += n * {size}"]
        if kind == "uuid":
            return lines + [f"{inner}{var} = [_uuid(v[i:i + 16]) for i in range(p, p + 16 * n, 16)]",
                            f"{inner}p += 16 * n",
                            f"{inner}if p > len(v):",
                            f"{inner}    raise _E('array {field.name} runs past the end of the record')"]
        lines.append(f"{inner}{var} = []")
        lines.append(f"{inner}for _ in range(n):")
        if nested:
            return lines + [f"{inner}    x, p = {nested}(v, p)", f"{inner}    {var}.append(x)"]
        decode = ".decode()" if kind == "string" else ""
        return lines + [*_uvarint("m", inner + "    "), f"{inner}    m -= 1",
                        f"{inner}    if m < 0:",
                        f"{inner}        raise _E('null element in array {field.name}')",
                        f"{inner}    {var}.append(v[p:p + m]{decode})", f"{inner}    p += m"]

    def _read_tagged(self, fields: tuple[Field, ...], locals_: dict[str, str], nested: dict[str, str]) -> list[str]:
        lines = ["    u = None", *_uvarint("t", "    "), "    for _ in range(t):"]
        lines += _uvarint("tag", "        ") + _uvarint("size", "        ") + ["        end = p + size"]
        keyword = "if"
        for field in sorted((f for f in fields if f.present_at(self.version) and f.tagged_at(self.version)),
                            key=lambda f: f.tag or 0):
            lines.append(f"        {keyword} tag == {field.tag}:")
            lines += self._read(field, locals_[field.name], nested.get(field.name), "            ")
            keyword = "elif"
        unknown = ["if u is None:", "    u = []", "u.append((tag, v[p:end]))", "p = end", "continue"]
        if keyword == "if":
            lines += [f"        {line}" for line in unknown]
        else:
            lines += ["        else:", *[f"            {line}" for line in unknown]]
        lines += ["        if p != end:",
                  "            raise _E('tagged field {} has {} bytes, read {}'.format(tag, size, p - end + size))"]
        return lines

    # -- encoding ----------------------------------------------------------------------------------------------

    def encoder(self, fields: tuple[Field, ...], what: str) -> str:
        version = self.version
        nested = {field.name: self.encoder(self._struct_fields(field), field.name)
                  for field in fields if field.present_at(version) and field.is_struct}
        name = self._name("_encode_")
        body: list[str] = []
        run: list[Field] = []
        for field in fields:
            if not field.present_at(version) or field.tagged_at(version):
                continue
            if not field.is_array and field.type in FIXED:
                run.append(field)
                continue
            body += self._write_run(run)
            body.append(f"    x = d.get({field.name!r}, {self._default(field)})")
            body += self._write(field, nested.get(field.name), "    ", "out")
        body += self._write_run(run)
        tagged = sorted((f for f in fields if f.present_at(version) and f.tagged_at(version)), key=lambda f: f.tag)
        body += ["    tags = []"]
        for field in tagged:
            default = self._default(field)
            body += [f"    x = d.get({field.name!r}, {default})", f"    if x != {default}:", "        t = bytearray()"]
            body += self._write(field, nested.get(field.name), "        ", "t")
            body.append(f"        tags.append(({field.tag}, t))")
        body += ["    u = d.get(UNKNOWN)", "    if u:", "        tags.extend(u)", "        tags.sort()",
                 "    _wuv(out, len(tags))", "    for tag, data in tags:", "        _wuv(out, tag)",
                 "        _wuv(out, len(data))", "        out += data"]
        self.lines.append(f"def {name}(d, out):  # {self.message.name} v{version}: {what}")
        self.lines += body
        return name

    def _write_run(self, run: list[Field]) -> list[str]:
        if not run:
            return []
        layout = self._constant(struct.Struct(">" + "".join(FIXED[field.type][0] for field in run)))
        values = []
        for field in run:
            value = f"d.get({field.name!r}, {self._default(field)})"
            values.append(f"_ub({value})" if field.type == "uuid" else value)
        run.clear()
        return [f"    out += {layout}.pack({', '.join(values)})"]

    def _write(self, field: Field, nested: str | None, pad: str, out: str) -> list[str]:
        """Lines that append the value in ``x`` (one field, of its type) to ``out``."""
        kind = field.element_type
        if not field.is_array and kind in FIXED:
            value = "_ub(x)" if kind == "uuid" else "x"
            return [f"{pad}{out} += {self._constant(struct.Struct('>' + FIXED[kind][0]))}.pack({value})"]
        if not field.is_array and nested:
            return [f"{pad}{nested}(x, {out})"]
        null = (f"{pad}    {out}.append(0)" if field.nullable_at(self.version)
                else f"{pad}    raise ValueError('non-nullable field {field.name} is None')")
        lines = [f"{pad}if x is None:", null, f"{pad}else:"]
        inner = pad + "    "
        if not field.is_array:
            encode = ".encode()" if kind == "string" else ""
            return lines + [f"{inner}e = x{encode}", f"{inner}_wuv({out}, len(e) + 1)", f"{inner}{out} += e"]
        lines.append(f"{inner}_wuv({out}, len(x) + 1)")
        if kind in FIXED and kind != "uuid":
            return lines + [f"{inner}{out} += _pack('>%d{FIXED[kind][0]}' % len(x), *x)"]
        lines.append(f"{inner}for y in x:")
        if kind == "uuid":
            return lines + [f"{inner}    {out} += _ub(y)"]
        if nested:
            return lines + [f"{inner}    {nested}(y, {out})"]
        encode = ".encode()" if kind == "string" else ""
        return lines + [f"{inner}    e = y{encode}", f"{inner}    _wuv({out}, len(e) + 1)", f"{inner}    {out} += e"]
