r"""GBNF grammars for a student's reply, and their use inside a decode loop.

``envelope`` is the tool-call envelope the renderer writes for an assistant turn (see
``tool_prelude.jinja``): optional reasoning prose, then one or more
``<tool_call>\n{"name": "python", "arguments": {"code": "..."}}\n</tool_call>`` blocks (JSON
whitespace is free, the code is any JSON string), or, as
:func:`~captain_ros.policy.toolcalls.parse_reply` also accepts, one or more fenced ``python``
blocks. A reply of prose alone, a call to another tool and broken JSON cannot be written under it;
every well-formed call can, so the grammar never refuses a reply the harness would execute. (A
reply without any call ends an episode; under the grammar a student ends one with ``finish()``.)

:class:`GrammarGate` runs a grammar through llama.cpp's own grammar sampler, lazily: the engine
picks its token from the unconstrained distribution and asks the gate; only when the grammar
rejects that token are the whole vocabulary's logits masked and the token picked again. The
log-probability an engine reports stays that of the unconstrained model (what a trainer
recomputes), and the gate counts the tokens it changed (``forced``).
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError

_NOT_TOOL = " | ".join(
    (f'"{"tool_call>"[:i]}" ' if i else "") + f"[^{'tool_call>'[i]}]" for i in range(10)
)  # "<" not opening "<tool_call>"

ENVELOPE = rf"""
root      ::= (prose "\n")? (calls | fences)
calls     ::= call ("\n" call)*
call      ::= "<tool_call>" ws "{{" ws "\"name\"" ws ":" ws "\"python\"" ws "," ws "\"arguments\"" ws ":" ws args ws "}}" ws "</tool_call>"
args      ::= "{{" ws "\"code\"" ws ":" ws string ws "}}" | string
string    ::= "\"" char* "\""
char      ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" hex hex hex hex)
hex       ::= [0-9a-fA-F]
ws        ::= [ \t\n]*
prose     ::= pchar+
pchar     ::= [^<] | "<" ({_NOT_TOOL})
fences    ::= fence ("\n" (prose "\n")? fence)*
fence     ::= "```" ("python" | "py" | "python3")? "\n" fcode "```"
fcode     ::= ([^`] | "`" [^`] | "``" [^`])*
"""

GRAMMARS = {"none": "", "envelope": ENVELOPE}


def grammar_text(name: str) -> str:
    """The GBNF text of the grammar ``name`` (``none``: no grammar)."""
    if name not in GRAMMARS:
        raise InvalidArgumentError(f"unknown grammar {name!r}; valid: {', '.join(GRAMMARS)}")
    return GRAMMARS[name]


class GrammarGate:
    """One reply's grammar state over a llama.cpp vocabulary.

    Args:
        vocab: The model's ``llama_vocab`` pointer.
        text: GBNF grammar (root rule ``root``).
        n_vocab: Vocabulary size (logit rows).
    """

    def __init__(self, vocab: Any, text: str, n_vocab: int) -> None:
        import llama_cpp

        self._ll = llama_cpp
        self.sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode(), b"root")
        if not self.sampler:
            raise InvalidArgumentError("the grammar does not parse (llama.cpp refused it)")
        self.n_vocab = n_vocab
        self.forced = 0
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_arr = llama_cpp.llama_token_data_array(
            data=self._one, size=1, selected=-1, sorted=False
        )
        self._all = (llama_cpp.llama_token_data * n_vocab)()
        view = np.ctypeslib.as_array(
            ctypes.cast(self._all, ctypes.POINTER(ctypes.c_int32)), shape=(n_vocab * 3,)
        )
        self._ids = view[0::3]
        self._logits = view.view(np.float32)[1::3]
        self._ids[:] = np.arange(n_vocab, dtype=np.int32)
        self._all_arr = llama_cpp.llama_token_data_array(
            data=self._all, size=n_vocab, selected=-1, sorted=False
        )

    def allows(self, token: int) -> bool:
        """Whether the grammar admits ``token`` next."""
        one: Any = self._one[0]
        one.id, one.logit, one.p = token, 0.0, 0.0
        self._one_arr.size = 1
        self._one_arr.selected = -1
        self._ll.llama_sampler_apply(self.sampler, ctypes.byref(self._one_arr))
        return math.isfinite(self._one[0].logit)

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every token the grammar rejects set to -inf."""
        self._ids[:] = np.arange(self.n_vocab, dtype=np.int32)
        self._logits[:] = logits
        self._all_arr.size = self.n_vocab
        self._all_arr.selected = -1
        self._all_arr.sorted = False
        self._ll.llama_sampler_apply(self.sampler, ctypes.byref(self._all_arr))
        out = np.full(self.n_vocab, -np.inf, dtype=np.float32)
        n = int(self._all_arr.size)
        out[self._ids[:n]] = self._logits[:n]
        return out

    def accept(self, token: int) -> None:
        """Advance the grammar over ``token``."""
        self._ll.llama_sampler_accept(self.sampler, token)

    def close(self) -> None:
        if self.sampler:
            self._ll.llama_sampler_free(self.sampler)
            self.sampler = None
