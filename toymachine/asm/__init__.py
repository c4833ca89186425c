"""Assembler: toy-machine assembly text → ``Program`` (the pipeline's first stage).

Syntax (one statement per line; ``;`` or ``#`` starts a comment)::

    LOAD a[0][1], R0          ; mnemonic, then operands separated by commas
    MAC r0, R1, R2, R2        ; mnemonics and registers are case-insensitive
    .data x = [1, 2, 3, 4]    ; inline input array (a nested list literal)
    .array c[2][2]            ; declare an array's shape (optionally `= fill`)
    LOAD Q[0:64, :], T0       ; tile machine: a block of rows/columns

Registers are ``R<n>`` (or ``T<n>``, tile registers by convention); a ``.T`` suffix
reads a tile register transposed. Every error names file, line and column.

``lexer`` splits lines into operands and numbers, ``literal`` parses ``.data`` lists,
``parser`` builds ``Instr``/``ArrayDecl``/``Program``, ``source`` reads files and streams.
"""

from __future__ import annotations

__all__ = ["parse", "parse_file", "parse_line", "parse_literal", "operand_spans", "strip_comment",
           "read_source", "decode_source", "line_iter", "open_error", "Chunks", "binary_chunks", "text_chunks", "line_chunks"]

from .lexer import operand_spans, strip_comment
from .literal import parse_literal
from .parser import parse, parse_file, parse_line
from .source import (
           Chunks,
           binary_chunks,
           decode_source,
           line_chunks,
           line_iter,
           open_error,
           read_source,
           text_chunks,
)
