"""The cattrs converter, built on first use (``convert.converter``): importing cattrs and building
its hooks cost about 15 ms, which a process whose first call is a chat (read by hand, see
``chat.types``) never pays.

Every shaped result class is structured by its reader (``convert.reader``); the hooks below keep
cattrs' own results while skipping its dispatch on the hot leaves.
"""

from __future__ import annotations

from collections import abc
from typing import Any, Callable, Mapping, Optional

import cattrs

from ..errors import HermesError


def _optional(make: Callable[..., object]) -> Callable[[object, object], object]:
    return lambda value, _: None if value is None else make(value)


def _optional_error(value: object, _: object) -> Optional[HermesError]:
    if value is None:
        return None
    if not isinstance(value, abc.Mapping):
        raise TypeError(f"expected an error object, got {type(value).__name__}")
    return HermesError.from_dict(value)


def make_converter(shaped: Callable[[Any], bool], reader: Callable[[Any], Callable[..., Any]],
                   object_copy: Callable[[object], dict[str, object]]) -> cattrs.Converter:
    """The converter: ``shaped`` tells a result class with a declared shape, ``reader`` gives its
    structure hook, ``object_copy`` copies a JSON object (``dict[str, Any]``)."""
    converter = cattrs.Converter()
    converter.register_unstructure_hook(HermesError, lambda e: e.to_dict())
    converter.register_structure_hook(HermesError, lambda d, _: HermesError.from_dict(d))
    # Response headers are kept as the transport gave them (case-insensitive), not copied.
    converter.register_structure_hook_func(lambda t: t == Mapping[str, str], lambda value, _: value)
    converter.register_structure_hook_func(lambda t: t == dict[str, Any], lambda value, _: object_copy(value))
    # Optional leaves as cattrs structures them (None, else the type called on the value), without
    # its dispatch per value: Responses results have seven of them, on every call.
    for leaf in (str, int, float, bool):
        converter.register_structure_hook(Optional[leaf], _optional(leaf))
    converter.register_structure_hook(Optional[dict[str, Any]], _optional(object_copy))
    converter.register_structure_hook(Optional[HermesError], _optional_error)
    converter.register_structure_hook_factory(shaped, reader)
    return converter
